package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// scriptPrelude runs before a Script's source, ahead of anything it reads:
// it closes descriptors ndbg's caller leaked (all from %d up), and sets the
// hard limits the tracer sets (address space %d, CPU seconds %d, no core
// dumps, 64 MiB files, 256 processes for non-root users); in the sandbox
// the script has no capability to raise them again.
const scriptPrelude = `import os as _ndbg_os, resource as _ndbg_r
_ndbg_os.closerange(%d, 1 << 30)
for _ndbg_k, _ndbg_v in ((_ndbg_r.RLIMIT_AS, %d), (_ndbg_r.RLIMIT_CPU, %d), (_ndbg_r.RLIMIT_CORE, 0),
                         (_ndbg_r.RLIMIT_FSIZE, 64 << 20), (_ndbg_r.RLIMIT_NPROC, 256)):
    _ndbg_r.setrlimit(_ndbg_k, (_ndbg_v, _ndbg_v))
del _ndbg_os, _ndbg_r, _ndbg_k, _ndbg_v
`

// Script runs source, a Python script of ndbg's own that works on untrusted
// text (a program to compile, the user's expressions over predicted or
// program-made reprs, a CRUXEval check), with stdin as its standard input,
// in the sandbox every program runs in (Command: no network, read-only
// system, a private scratch directory, no process creation, death with
// ndbg), under lim: the interpreter's hard limits (lim.MaxMemory, CPU time),
// a wall-clock limit of lim.Timeout after which its whole process group is
// killed, and lim.MaxStdout bytes of standard output. extra become the
// script's fds 3, 4, ... (Script closes them once the child holds them).
//
// It returns the script's standard output. Errors are *Error values or the
// context's error: ErrSandbox where the sandbox cannot start (lim.Unsandboxed
// runs without it, only when the user asks for it by name); ErrTimeout;
// ErrMemory for a MemoryError that escaped the script; ErrCrash for any
// other failure (a non-zero exit, a signal, output past lim.MaxStdout), its
// message the end of the script's standard error. With ErrTimeout and
// ErrCrash the output so far is returned too.
func Script(ctx context.Context, lim Limits, source string, stdin []byte, extra ...*os.File) ([]byte, error) {
	closeExtra := func() {
		for _, f := range extra {
			f.Close()
		}
	}
	lim, err := lim.resolved(ctx)
	if err != nil {
		closeExtra()
		return nil, err
	}
	dir := ""
	if lim.Unsandboxed {
		var err error
		if dir, err = makeWorkDir(); err != nil {
			closeExtra()
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	cpu := int(math.Ceil((lim.Timeout + killGrace).Seconds()))
	prelude := fmt.Sprintf(scriptPrelude, 3+len(extra), lim.MaxMemory, cpu)
	env := []string{"PYTHONHASHSEED=" + lim.HashSeed, "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	cmd, err := Command(lim, dir, env, extra, []string{"-I", "-S", "-B"}, prelude+source)
	if err != nil {
		closeExtra()
		return nil, err
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout := &capBuffer{cap: lim.MaxStdout}
	stderr := &capBuffer{cap: consoleCap}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the child's ends (and the seccomp filter's pipe)
	}
	if err != nil {
		return nil, fmt.Errorf("trace: start %s: %w", cmd.Path, err)
	}
	if lim.onStart != nil {
		lim.onStart(cmd.Process.Pid)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(lim.Timeout)
	defer timer.Stop()
	timedOut, done := false, false
	select {
	case err = <-waited:
		done = true
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
	}
	// The child leads its own group (Setpgid): -pid ends it and anything it
	// left behind (the sandbox's PID namespace dies with its first process).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if !done {
		err = <-waited
	}
	out := []byte(stdout.String())
	console := stderr.String()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case timedOut:
		return out, &Error{Kind: ErrTimeout, Msg: fmt.Sprintf("the script did not finish within %v", lim.Timeout)}
	}
	if refused := sandboxRefused(lim, console); refused != nil {
		return nil, refused
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) && !errors.Is(err, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("trace: running %s: %w", lim.Python, err)
	}
	tail := lastLine(console)
	switch {
	case err != nil && strings.HasPrefix(tail, "MemoryError"):
		return out, &Error{Kind: ErrMemory, Msg: fmt.Sprintf("the script ran out of memory (limit %d bytes)", lim.MaxMemory)}
	case err != nil:
		return out, &Error{Kind: ErrCrash, Msg: fmt.Sprintf("the script failed (%v): %s", err, tail)}
	case stdout.Over():
		return out, &Error{Kind: ErrCrash, Msg: fmt.Sprintf("the script wrote more than %d bytes", lim.MaxStdout)}
	}
	return out, nil
}

// lastLine returns the last non-empty line of s, trimmed (Python's
// traceback ends with the exception).
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimSpace(s[strings.LastIndexByte(s, '\n')+1:])
}
