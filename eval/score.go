package eval

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ndbg/ndbg/trace"
)

// Scorer runs CRUXEval's official check: the item's code, then an assert
// comparing the reference output with a prediction, in a fresh python3
// process (3 s by default). Each check gets its own temporary directory and
// process group, no inherited environment, an address-space limit and a
// guard that disables process creation, signals and file removal (as
// human-eval's reliability guard does), and the whole group is killed when
// it ends. A check that fails, raises, times out or breaks the guard is a
// failure, never an error. A Scorer is safe for concurrent use.
type Scorer struct {
	// Python is the interpreter; empty means python3 on PATH.
	Python string
	// Timeout is the wall-clock limit of one check (default 3 s).
	Timeout time.Duration
	// MaxMemory is the address-space limit in bytes (default 2 GiB).
	MaxMemory int64
}

// Arg is one argument of a CRUXEval-I call: a Python expression (a repr),
// passed positionally, as *args, by keyword, or as **kwargs.
type Arg struct {
	Kind ArgKind
	Name string // the parameter name (keyword arguments)
	Repr string
}

// ArgKind says how an argument is passed.
type ArgKind uint8

// The ways of passing an argument.
const (
	Positional ArgKind = iota
	Star               // *args
	Keyword            // name=value
	StarStar           // **kwargs
)

// Call renders args as the text of a call of f, e.g. "f(1, *(2, 3), k='a')".
func Call(f string, args []Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch a.Kind {
		case Star:
			parts[i] = "*" + a.Repr
		case Keyword:
			parts[i] = a.Name + "=" + a.Repr
		case StarStar:
			parts[i] = "**" + a.Repr
		default:
			parts[i] = a.Repr
		}
	}
	return f + "(" + strings.Join(parts, ", ") + ")"
}

// guard runs before the item's code: limits and disabled dangerous calls.
// %d is the address-space limit.
const guard = `import resource as __r
__r.setrlimit(__r.RLIMIT_AS, (%d, %d))
__r.setrlimit(__r.RLIMIT_FSIZE, (1 << 20, 1 << 20))
import os as __os, sys as __sys, builtins as __b
for __n in ('system', 'fork', 'forkpty', 'execv', 'execve', 'execl', 'execle', 'execlp', 'execlpe', 'execvp', 'execvpe',
            'spawnl', 'spawnle', 'spawnlp', 'spawnlpe', 'spawnv', 'spawnve', 'spawnvp', 'spawnvpe', 'posix_spawn', 'posix_spawnp',
            'popen', 'kill', 'killpg', 'remove', 'unlink', 'rmdir', 'removedirs', 'rename', 'renames', 'replace', 'truncate',
            'ftruncate', 'putenv', 'unsetenv', 'chmod', 'chown', 'fchmod', 'fchown', 'lchown', 'setuid', 'setgid', 'chroot',
            'fchdir', 'chdir', 'symlink', 'link', 'mkfifo', 'mknod', 'setsid', 'setpgid', 'nice', '_exit', 'abort'):
    if hasattr(__os, __n):
        setattr(__os, __n, None)
for __m in ('subprocess', 'shutil', 'multiprocessing', 'ctypes', 'signal', 'socket', 'pty'):
    __sys.modules[__m] = None
__b.exit = __b.quit = None
del __r, __n, __m
`

// CheckOutput scores a CRUXEval-O prediction: it passes when `assert
// <ref> == <pred>` holds after the item's code runs. The prediction must be
// one Python expression (compiled in eval mode), so a prediction cannot
// rewrite the assertion around it (say "0 or True").
func (s *Scorer) CheckOutput(ctx context.Context, code, ref, pred string) (bool, error) {
	var b strings.Builder
	b.WriteString(code)
	fmt.Fprintf(&b, "\n__pred = eval(compile(bytes.fromhex(%q).decode('utf-8'), '<prediction>', 'eval'))\n", hex.EncodeToString([]byte(pred)))
	fmt.Fprintf(&b, "assert (%s) == __pred\n", ref)
	return s.run(ctx, b.String())
}

// CheckInput scores a CRUXEval-I prediction: it passes when `assert
// f(<args>) == <ref>` holds after the item's code runs. Each argument must
// be one Python expression.
func (s *Scorer) CheckInput(ctx context.Context, code, entry string, args []Arg, ref string) (bool, error) {
	var b strings.Builder
	b.WriteString(code)
	b.WriteString("\n__pos, __kw = [], {}\n")
	for _, a := range args {
		ex := fmt.Sprintf("eval(compile(bytes.fromhex(%q).decode('utf-8'), '<argument>', 'eval'))", hex.EncodeToString([]byte(a.Repr)))
		switch a.Kind {
		case Star:
			fmt.Fprintf(&b, "__pos.extend(%s)\n", ex)
		case Keyword:
			fmt.Fprintf(&b, "__kw[%q] = %s\n", a.Name, ex)
		case StarStar:
			fmt.Fprintf(&b, "__kw.update(%s)\n", ex)
		default:
			fmt.Fprintf(&b, "__pos.append(%s)\n", ex)
		}
	}
	fmt.Fprintf(&b, "assert %s(*__pos, **__kw) == (%s)\n", entry, ref)
	return s.run(ctx, b.String())
}

// run executes a check script; true when it exits with status 0.
func (s *Scorer) run(ctx context.Context, script string) (bool, error) {
	py := s.Python
	if py == "" {
		var err error
		if py, err = trace.FindPython(ctx); err != nil {
			return false, fmt.Errorf("eval: %w", err)
		}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	mem := s.MaxMemory
	if mem <= 0 {
		mem = 2 << 30
	}
	dir, err := os.MkdirTemp("", "ndbg-check-")
	if err != nil {
		return false, fmt.Errorf("eval: %w", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "check.py")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(guard, mem, mem)+script), 0o600); err != nil {
		return false, fmt.Errorf("eval: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, py, "-I", "-S", "-B", file)
	cmd.Dir = dir
	cmd.Env = []string{"PYTHONHASHSEED=0", "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin", "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout = &limited{w: &out, n: 4 << 10}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything the check left behind
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit), cctx.Err() != nil, errors.Is(err, exec.ErrWaitDelay):
		return false, nil // failed, raised, killed or timed out: a wrong prediction
	default:
		return false, fmt.Errorf("eval: running %s: %w", py, err)
	}
}

// limited keeps the first n bytes written and discards the rest.
type limited struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
