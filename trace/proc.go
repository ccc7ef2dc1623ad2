package trace

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

const (
	startTimeout = 20 * time.Second // interpreter start-up until its hello line
	killGrace    = 2 * time.Second  // beyond Limits.Timeout before the group is killed
	consoleCap   = 64 << 10         // bytes kept of the child's own fd 1 and 2
	exitGrace    = time.Second      // for a finished tracer to exit by itself (see shutdown)
)

// FindPython returns the python3 interpreter on PATH, resolved to the real
// executable (sys.executable) so shims such as pyenv's, which need the
// caller's environment, are not run inside the sandbox.
func FindPython(ctx context.Context) (string, error) {
	path, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("trace: find python3: %w", err)
	}
	if isELF(path) {
		return path, nil // a real interpreter, not a shim script
	}
	tctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	out, err := exec.CommandContext(tctx, path, "-S", "-c", "import sys; sys.stdout.write(sys.executable)").Output()
	if cerr := ctx.Err(); err != nil && cerr != nil {
		err = cerr // the caller's cancellation killed it: say so (errors.Is(err, context.Canceled))
	}
	if err != nil {
		return "", fmt.Errorf("trace: ask %s for sys.executable: %w", path, err)
	}
	exe := strings.TrimSpace(string(out))
	if exe == "" {
		return path, nil
	}
	return exe, nil
}

// isELF reports whether path (symbolic links followed) is an ELF binary.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}

// capBuffer keeps the first cap bytes written to it, and whether more came;
// safe for concurrent use.
type capBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	cap  int
	over bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.cap - b.buf.Len()
	b.buf.Write(p[:max(0, min(room, len(p)))])
	b.over = b.over || len(p) > room
	return len(p), nil
}

// Over reports whether more than cap bytes were written.
func (b *capBuffer) Over() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// line is one wire line from the tracer, or the error that ended reading.
type line struct {
	data []byte
	err  error
}

// proc is one sandboxed tracer process: its own process group, no stdin,
// requests on fd 4 and results on fd 3, each result line signed with a key
// only the tracer holds (see sign in tracer.py); dir is the host work
// directory of an unsandboxed run ("" in the sandbox, whose scratch space
// dies with it).
type proc struct {
	cmd     *exec.Cmd
	dir     string
	key     []byte
	req     *os.File // our end of the child's fd 4
	resp    *os.File // our end of the child's fd 3
	lines   chan line
	quit    chan struct{}
	readers sync.WaitGroup
	console *capBuffer
	lim     Limits
	version string
	maxLine int
	once    sync.Once
}

// startProc starts a tracer in mode "single" or "batch", hands it its
// signing key and waits for its hello line.
func startProc(ctx context.Context, lim Limits, mode string) (p *proc, err error) {
	dir := ""
	if lim.Unsandboxed {
		if dir, err = makeWorkDir(); err != nil {
			return nil, err
		}
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("trace: signing key: %w", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("trace: pipe: %w", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		respR.Close()
		respW.Close()
		return nil, fmt.Errorf("trace: pipe: %w", err)
	}
	closeAll := func() {
		respR.Close()
		respW.Close()
		reqR.Close()
		reqW.Close()
		os.RemoveAll(dir)
	}
	console := &capBuffer{cap: consoleCap}
	env := []string{"PYTHONHASHSEED=" + lim.HashSeed, "PYTHONSAFEPATH=1", "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	cmd, err := Command(lim, dir, env, []*os.File{respW, reqR}, // fd 3, fd 4
		[]string{"-S", "-s", "-B"}, tracerSource, mode, strconv.FormatInt(lim.MaxMemory, 10), interpreterCPU(lim, mode))
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = console
	cmd.Stderr = console
	cmd.WaitDelay = time.Second
	p = &proc{
		cmd: cmd, dir: dir, key: key, req: reqW, resp: respR, console: console, lim: lim,
		lines: make(chan line), quit: make(chan struct{}),
		// The tracer caps its estimate of the events' size and the return
		// value's UTF-8 bytes at MaxOutputBytes each; escaping in ASCII JSON
		// makes a byte at most 6 (a character at most 12); stdout is base64.
		maxLine: 16*lim.MaxOutputBytes + 2*lim.MaxStdout + 1<<20,
	}
	if mode == "live" {
		p.maxLine = liveLineCap // set before the reader starts, which reads it
	}
	err = cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the child's ends (and the seccomp filter's pipe)
	}
	if err != nil {
		respR.Close()
		reqW.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("trace: start %s: %w", cmd.Path, err)
	}
	p.readers.Add(1)
	go p.read()
	started := p // p is the named result: a failed return sets it to nil before deferred calls run
	defer func() {
		if err != nil {
			started.kill()
		}
	}()
	// The key goes first, before any program: the tracer keeps it out of
	// the program's reach as far as one interpreter can (docs/security.md).
	if err := p.send([]byte(hex.EncodeToString(key)+"\n"), time.Now().Add(startTimeout)); err != nil {
		return nil, err
	}
	data, err := p.next(ctx, time.Now().Add(startTimeout))
	if err != nil {
		return nil, err
	}
	v, err := decodeHello(data)
	if err != nil {
		return nil, &Error{Kind: ErrProtocol, Msg: err.Error()}
	}
	p.version = v
	if lim.onStart != nil {
		lim.onStart(cmd.Process.Pid)
	}
	return p, nil
}

// makeWorkDir makes the host work directory of an unsandboxed run, named
// after this process so that a later start can remove the directories of a
// killed one (see removeStaleWorkDirs).
func makeWorkDir() (string, error) {
	removeStaleWorkDirs()
	dir, err := os.MkdirTemp("", fmt.Sprintf("ndbg-trace-%d-", os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("trace: make work dir: %w", err)
	}
	return dir, nil
}

// removeStaleWorkDirs removes the ndbg-trace-PID-* directories whose process
// PID no longer exists: what a SIGKILLed ndbg left behind.
func removeStaleWorkDirs() {
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), "ndbg-trace-*-*"))
	for _, path := range paths {
		f := strings.SplitN(strings.TrimPrefix(filepath.Base(path), "ndbg-trace-"), "-", 2)
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(path)
		}
	}
}

// read delivers the tracer's lines until end of file, an error or quit.
func (p *proc) read() {
	defer p.readers.Done()
	br := bufio.NewReaderSize(p.resp, 1<<16)
	for {
		data, err := readLine(br, p.maxLine)
		select {
		case p.lines <- line{data, err}:
		case <-p.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one '\n'-terminated line of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max {
			return nil, &Error{Kind: ErrProtocol, Msg: fmt.Sprintf("result line longer than %d bytes", max)}
		}
		if err == nil {
			if buf == nil {
				return append([]byte(nil), frag[:len(frag)-1]...), nil
			}
			buf = append(buf, frag...)
			return buf[:len(buf)-1], nil
		}
		buf = append(buf, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(buf) > 0 {
				return nil, &Error{Kind: ErrProtocol, Msg: "truncated result line"}
			}
			return nil, err
		}
	}
}

// next waits for the tracer's next line until deadline or ctx ends.
func (p *proc) next(ctx context.Context, deadline time.Time) ([]byte, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case l := <-p.lines:
		if l.err != nil {
			return nil, p.died(l.err)
		}
		data, err := p.verify(l.data)
		if err != nil {
			p.kill()
			return nil, err
		}
		return data, nil
	case <-timer.C:
		p.kill()
		return nil, &Error{Kind: ErrTimeout, Msg: "killed: the program did not stop at its time limit"}
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("trace: %w", ctx.Err())
	}
}

// verify checks a line's signature, "HEX-HMAC-SHA256 JSON", and returns
// its JSON. A line the tracer did not sign was written by the program.
func (p *proc) verify(data []byte) ([]byte, error) {
	sig, body, ok := bytes.Cut(data, []byte{' '})
	want := hmac.New(sha256.New, p.key)
	want.Write(body)
	got := make([]byte, sha256.Size)
	if n, err := hex.Decode(got, sig); !ok || err != nil || n != len(got) || !hmac.Equal(got, want.Sum(nil)) {
		return nil, &Error{Kind: ErrForged, Msg: fmt.Sprintf("a record on the tracer's channel is not signed by the tracer (the program wrote it): %.80q", data)}
	}
	return body, nil
}

// died explains why the tracer's output ended without a result.
func (p *proc) died(readErr error) error {
	p.kill()
	var te *Error
	if errors.As(readErr, &te) {
		return te
	}
	console := p.console.String()
	if err := sandboxRefused(p.lim, console); err != nil {
		return err
	}
	tail := console[max(0, len(console)-2000):]
	state := "unknown state"
	if ps := p.cmd.ProcessState; ps != nil {
		state = ps.String()
	}
	if strings.Contains(console, "MemoryError") || strings.Contains(console, "Cannot allocate memory") {
		return &Error{Kind: ErrMemory, Msg: fmt.Sprintf("interpreter died (%s): %s", state, tail)}
	}
	return &Error{Kind: ErrCrash, Msg: fmt.Sprintf("interpreter died (%s): %s", state, tail)}
}

// encodeRequest writes one request line (HTML characters unescaped, so a
// request grows little beyond its source).
func encodeRequest(id int, prog *dsl.Program, call string, lim Limits) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(request{
		ID: id, Source: prog.Source, Entry: prog.Entry, Call: call,
		Timeout: lim.Timeout.Seconds(), MaxEvents: lim.MaxEvents,
		MaxBytes: lim.MaxOutputBytes, MaxStdout: lim.MaxStdout, NoExec: lim.noExec,
	})
	if err != nil {
		return nil, fmt.Errorf("trace: encode request: %w", err)
	}
	return buf.Bytes(), nil // Encode ends it with '\n'
}

// send queues one encoded request in the tracer; deadline bounds a blocked
// write.
func (p *proc) send(req []byte, deadline time.Time) error {
	if err := p.req.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("trace: request deadline: %w", err)
	}
	if _, err := p.req.Write(req); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.kill()
			return &Error{Kind: ErrTimeout, Msg: "killed: the tracer stopped reading requests"}
		}
		return p.died(fmt.Errorf("trace: send request: %w", err))
	}
	return nil
}

// recv waits for the result of request id until deadline. Errors that leave
// the process unusable kill it first (see dead).
func (p *proc) recv(ctx context.Context, id int, deadline time.Time) (*Result, error) {
	data, err := p.next(ctx, deadline)
	if err != nil {
		return nil, err
	}
	w, err := decodeResult(data)
	if err == nil && w.ID != id {
		err = fmt.Errorf("result for request %d, want %d", w.ID, id)
	}
	if err != nil {
		p.kill()
		return nil, &Error{Kind: ErrProtocol, Msg: err.Error()}
	}
	if w.Retire {
		p.kill() // queued requests go to a fresh interpreter (Batch)
	}
	return w.result(p.version)
}

// run traces one program.
func (p *proc) run(ctx context.Context, id int, prog *dsl.Program, call string, lim Limits) (*Result, error) {
	req, err := encodeRequest(id, prog, call, lim)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lim.Timeout + killGrace)
	if err := p.send(req, deadline); err != nil {
		return nil, err
	}
	return p.recv(ctx, id, deadline)
}

// dead reports whether the process has been killed.
func (p *proc) dead() bool {
	select {
	case <-p.quit:
		return true
	default:
		return false
	}
}

// shutdown ends a tracer that is done: it exits by itself at the end of its
// requests, which is quick, where after a kill the kernel takes a moment
// (a second or two on a loaded machine) to tear the sandbox's namespaces
// down. A tracer that has not exited after exitGrace is killed.
func (p *proc) shutdown() {
	p.req.Close()
	p.end(exitGrace)
}

// childGrace is how long end waits for bwrap to reap the sandbox's init
// that killChildren killed, and exit by itself.
const childGrace = 2 * time.Second

// waitClosed waits up to d for c to close and says whether it did.
func waitClosed(c <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c:
		return true
	case <-timer.C:
		return false
	}
}

// killChildren kills the children of the process pid (the sandbox's init,
// PID 1 of its namespace, which takes every process there with it; bwrap
// starts it in a session of its own, outside bwrap's group) and says
// whether it found any. Then bwrap reaps it and exits by itself: a bwrap
// killed first leaves its init, killed by --die-with-parent, to the host's
// init, a zombie wherever that init does not reap (a container whose PID 1
// is a plain program). Without /proc/PID/task/PID/children (a kernel
// without CONFIG_PROC_CHILDREN), nothing is found.
func killChildren(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return false
	}
	found := false
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil && c > 1 {
			found = syscall.Kill(c, syscall.SIGKILL) == nil || found
		}
	}
	return found
}

// kill ends the whole process group at once; see end.
func (p *proc) kill() { p.end(0) }

// end waits up to grace for the child to exit, then kills its children
// (killChildren) and waits up to childGrace for it to exit after them, then
// kills its whole process group, reaps the child, stops the reader and
// removes the work directory, if any. It is safe to call more than once.
func (p *proc) end(grace time.Duration) {
	p.once.Do(func() {
		if p.cmd.Process != nil {
			exited := make(chan struct{})
			go func() {
				_ = p.cmd.Wait()
				close(exited)
			}()
			if !waitClosed(exited, grace) && killChildren(p.cmd.Process.Pid) {
				waitClosed(exited, childGrace)
			}
			// The child leads its own group (Setpgid), so -pid is the group.
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		close(p.quit)
		p.req.Close()
		p.resp.Close()
		p.readers.Wait()
		if p.dir != "" {
			os.RemoveAll(p.dir)
		}
	})
}
