package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// ErrSandbox: the operating-system sandbox could not be set up (bubblewrap
// is missing or the kernel refuses namespaces), so the program was not run.
// Limits.Unsandboxed runs it without the sandbox when the user asks for that.
var ErrSandbox = errors.New("trace: no sandbox")

// ScratchDir is the program's working directory inside the sandbox, and the
// only place it can write: a private tmpfs of scratchBytes mounted at /tmp,
// gone when the sandbox ends.
const ScratchDir = "/tmp"

const scratchBytes = 64 << 20

// Command returns the command that runs python with args inside the
// operating-system sandbox (docs/security.md); every program ndbg runs
// (trace.Run, Batch, CRUXEval scoring) starts through it. The sandbox is bubblewrap (bwrap): new user, PID, mount, network, IPC, UTS
// and cgroup namespaces, no capabilities, no further user namespaces, a new
// session (no terminal), the whole file system read-only, a fresh /dev and
// /proc, a size-limited tmpfs at /tmp as the only writable place and the
// working directory, and death with its parent (the PID namespace, and so
// every process in it, ends with ndbg). A seccomp filter refuses every
// process creation (fork, vfork, clone without CLONE_THREAD; clone3 answers
// ENOSYS so the C library falls back to clone): threads work, processes do
// not, which bounds the process count for root too, whom the kernel exempts
// from RLIMIT_NPROC. The interpreter sets its own hard rlimits (address
// space, CPU time, file size, processes, core dumps) before any program code
// runs; without capabilities it cannot raise them again.
//
// When lim.Unsandboxed, python runs directly in dir (which then must exist:
// the program's working directory); sandboxed, dir is unused. env is the child's whole environment.
// The caller sets Stdin/Stdout/Stderr and may append to ExtraFiles (fds 3,
// 4, ... in the child); the seccomp filter travels on the last extra file,
// which Command adds, so callers append theirs first via extra.
func Command(lim Limits, dir string, env []string, extra []*os.File, args ...string) (*exec.Cmd, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if lim.Unsandboxed {
		cmd := exec.Command(lim.Python, args...)
		cmd.Dir = dir
		cmd.Env = env
		cmd.ExtraFiles = extra
		cmd.SysProcAttr = attr
		return cmd, nil
	}
	bwrap := lim.bwrap
	if bwrap == "" {
		path, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, &Error{Kind: ErrSandbox, Msg: "bubblewrap (bwrap) is not installed: install it (apt-get install bubblewrap), " +
				"or run without the sandbox by asking for it (trace.Limits.Unsandboxed, ndbg --unsandboxed)"}
		}
		bwrap = path
	}
	filter, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	fr, fw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("trace: seccomp pipe: %w", err)
	}
	_, err = fw.Write(filter) // a few hundred bytes: far below a pipe's buffer
	fw.Close()
	if err != nil {
		fr.Close()
		return nil, fmt.Errorf("trace: write seccomp filter: %w", err)
	}
	seccompFD := 3 + len(extra)
	bargs := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
		"--die-with-parent", "--new-session", "--hostname", "ndbg",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--size", strconv.Itoa(scratchBytes), "--tmpfs", ScratchDir, "--chdir", ScratchDir,
		"--seccomp", strconv.Itoa(seccompFD),
		"--", lim.Python,
	}
	cmd := exec.Command(bwrap, append(bargs, args...)...)
	cmd.Env = env
	cmd.ExtraFiles = append(append([]*os.File(nil), extra...), fr)
	cmd.SysProcAttr = attr
	return cmd, nil
}

// sandboxRefused turns bubblewrap's own complaint (its stderr, before the
// interpreter ran) into an ErrSandbox error, or returns nil when console
// holds none.
func sandboxRefused(lim Limits, console string) error {
	if lim.Unsandboxed || !strings.HasPrefix(console, "bwrap: ") {
		return nil
	}
	msg := strings.TrimSpace(strings.SplitN(console, "\n", 2)[0])
	return &Error{Kind: ErrSandbox, Msg: fmt.Sprintf("the kernel refused the sandbox (%s): the program was not run; "+
		"run without the sandbox only by asking for it (trace.Limits.Unsandboxed, ndbg --unsandboxed)", msg)}
}

// Classic BPF and seccomp constants (linux/filter.h, linux/seccomp.h).
const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJsetK  = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	seccompRetKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	seccompRetErrno = 0x00050000
	seccompRetAllow = 0x7fff0000

	cloneThread = 0x00010000
	sysClone3   = 435 // the same number on every architecture
)

// seccompFilter returns the classic-BPF program (struct sock_filter[], host
// byte order) that refuses process creation; see Command.
func seccompFilter() ([]byte, error) {
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	var arch, clone uint32
	var forks []uint32
	x32 := false
	switch runtime.GOARCH {
	case "amd64":
		arch, clone, forks, x32 = 0xC000003E, 56, []uint32{57, 58}, true // AUDIT_ARCH_X86_64; fork, vfork
	case "arm64":
		arch, clone = 0xC00000B7, 220 // AUDIT_ARCH_AARCH64; no fork or vfork
	default:
		return nil, &Error{Kind: ErrSandbox, Msg: "no seccomp filter for " + runtime.GOARCH + ": run without the sandbox only by asking for it (trace.Limits.Unsandboxed)"}
	}
	eperm := uint32(seccompRetErrno | uint32(syscall.EPERM))
	prog := []insn{
		{bpfLdWAbs, 0, 0, 4}, // seccomp_data.arch
		{bpfJeqK, 1, 0, arch},
		{bpfRetK, 0, 0, seccompRetKill},
		{bpfLdWAbs, 0, 0, 0}, // seccomp_data.nr
	}
	if x32 { // x32 system calls (nr | 0x40000000) would bypass the numbers below
		prog = append(prog, insn{bpfJgeK, 0, 1, 0x40000000}, insn{bpfRetK, 0, 0, eperm})
	}
	for _, nr := range forks {
		prog = append(prog, insn{bpfJeqK, 0, 1, nr}, insn{bpfRetK, 0, 0, eperm})
	}
	prog = append(prog,
		insn{bpfJeqK, 0, 1, sysClone3}, insn{bpfRetK, 0, 0, seccompRetErrno | uint32(syscall.ENOSYS)},
		insn{bpfJeqK, 1, 0, clone}, insn{bpfRetK, 0, 0, seccompRetAllow},
		insn{bpfLdWAbs, 0, 0, 16}, // low word of args[0], the clone flags
		insn{bpfJsetK, 0, 1, cloneThread}, insn{bpfRetK, 0, 0, seccompRetAllow},
		insn{bpfRetK, 0, 0, eperm},
	)
	buf := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		buf = binary.NativeEndian.AppendUint16(buf, in.code)
		buf = append(buf, in.jt, in.jf)
		buf = binary.NativeEndian.AppendUint32(buf, in.k)
	}
	return buf, nil
}
