package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// SandboxUID and SandboxGID are the user and group (nobody, nogroup) every
// program runs as when ndbg runs as root: the sandbox never runs code as the
// host's uid 0, whose files (and /proc/sys) it would otherwise own. Run by
// another user, a program runs as that user inside its user namespace.
//
// Not 65534 (nobody, nogroup): that is a real account other programs run
// as, and a process of the same uid may signal the interpreter or lower its
// limits (kill, prlimit). 65533 lies in the range Debian reserves and never
// allocates (65000-65533), so no account of the host has it.
const (
	SandboxUID = 65533
	SandboxGID = 65533
)

// Command returns the command that runs the Python code (python's -c) with
// the interpreter flags pyFlags and the arguments argv (sys.argv[1:]) inside
// the operating-system sandbox (docs/security.md); every program ndbg runs
// (trace.Run, Batch, Starter, Script: CRUXEval verdicts, expressions, the
// decoder's analysis) starts through it. The sandbox is bubblewrap (bwrap):
//
//   - new PID, mount, network, IPC, UTS and cgroup namespaces; a new session
//     (no terminal); death with its parent (the PID namespace, and so every
//     process in it, ends with ndbg);
//   - never the host's root: run by root, bwrap keeps only CAP_SETUID and
//     CAP_SETGID and the code's first line (before anything untrusted is
//     read) becomes SandboxUID/SandboxGID with no supplementary groups, which
//     drops every capability; run by another user, a user namespace of its
//     own with no capabilities and no further user namespaces;
//   - a file system of its own: only what the interpreter needs, read-only
//     (/usr and the /bin, /lib... links or folders, the interpreter's own
//     prefix wherever it lives, a few files of /etc: interpreterMounts), a
//     fresh /proc whose /proc/sys is read-only, a read-only /dev with the
//     usual device nodes, and a size-limited tmpfs at /tmp as the only
//     writable place and the working directory: no host /tmp, /var, /run,
//     /home, /root or /sys, so no host unix socket either;
//   - a seccomp filter (seccompFilter) that refuses process creation (fork,
//     vfork, clone without CLONE_THREAD; clone3 answers ENOSYS so the C
//     library falls back to clone), new namespaces, and the kernel's shared
//     memory and key stores: threads work, processes do not, which bounds
//     the process count for root too.
//
// The interpreter sets its own hard rlimits (address space, CPU time, file
// size, processes, core dumps) before any program code runs; without
// capabilities it cannot raise them again.
//
// When lim.Unsandboxed, python runs directly in dir (which then must exist:
// the program's working directory); sandboxed, dir is unused. env is the
// child's whole environment. The caller sets Stdin/Stdout/Stderr; extra
// become the child's fds 3, 4, ...; the seccomp filter travels on the last
// extra file, which Command adds.
func Command(lim Limits, dir string, env []string, extra []*os.File, pyFlags []string, code string, argv ...string) (*exec.Cmd, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pyArgs := func(code string) []string {
		args := append(append([]string(nil), pyFlags...), "-c", code)
		return append(args, argv...)
	}
	if lim.Unsandboxed {
		cmd := exec.Command(lim.Python, pyArgs(code)...)
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
	asRoot := os.Geteuid() == 0
	bargs := sandboxArgs(lim, asRoot, 3+len(extra))
	if asRoot {
		code = dropPrivileges + code
	}
	cmd := exec.Command(bwrap, append(append(bargs, "--", lim.Python), pyArgs(code)...)...)
	cmd.Env = env
	cmd.Dir = "/" // bwrap, as SandboxUID where it drops, need not reach the caller's folder
	cmd.ExtraFiles = append(append([]*os.File(nil), extra...), fr)
	cmd.SysProcAttr = attr
	return cmd, nil
}

// dropPrivileges is the first line of every sandboxed program when ndbg
// runs as root: bwrap left the interpreter uid 0 with only CAP_SETUID and
// CAP_SETGID, and this makes it SandboxUID/SandboxGID (65533) with no
// groups, which clears every capability (and makes the process
// non-dumpable, so its /proc/self belongs to root). It runs before the code
// reads anything, and a failure raises, so nothing after it runs as root.
var dropPrivileges = fmt.Sprintf("import os as _ndbg_os; _ndbg_os.setgroups([]); _ndbg_os.setresgid(%d, %d, %d); "+
	"_ndbg_os.setresuid(%d, %d, %d); del _ndbg_os\n", SandboxGID, SandboxGID, SandboxGID, SandboxUID, SandboxUID, SandboxUID)

// sandboxArgs returns bubblewrap's arguments (before "--") for lim's
// interpreter, as root or not (see Command), with the seccomp filter on fd
// seccompFD.
func sandboxArgs(lim Limits, asRoot bool, seccompFD int) []string {
	var a []string
	if asRoot {
		// No user namespace: root sets up the mounts with its own rights
		// (an interpreter under /root is reachable), and the program then
		// drops to SandboxUID (dropPrivileges); the seccomp filter refuses
		// new user namespaces, which --disable-userns would need one for.
		a = append(a, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
			"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID")
	} else {
		a = append(a, "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL")
	}
	a = append(a, "--die-with-parent", "--new-session", "--hostname", "ndbg")
	a = append(a, interpreterMounts(lim.Python)...)
	a = append(a,
		"--dev", "/dev", "--remount-ro", "/dev",
		"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
		"--perms", "1777", "--size", strconv.Itoa(scratchBytes), "--tmpfs", ScratchDir, "--chdir", ScratchDir,
	)
	a = append(a, lim.testMounts...)
	// The sandbox's own root, which holds the mount points: not a second
	// writable place.
	return append(a, "--remount-ro", "/", "--seccomp", strconv.Itoa(seccompFD))
}

// systemRoots are the host folders every interpreter may need, bound
// read-only where they are folders and recreated where they are symbolic
// links (a merged /usr's /bin -> usr/bin).
var systemRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the files of /etc that the interpreter and the standard
// library read: the dynamic loader's cache, time zone, users and groups
// (pwd, getpass), name service and host tables (socket's lookups of
// localhost, services and protocols), MIME types, the OS release, Debian's
// alternatives and python3 configuration, and the public certificates.
// Each is bound read-only where it exists; nothing else of /etc is there.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/timezone",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/mime.types", "/etc/mailcap", "/etc/os-release",
	"/etc/alternatives", "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/python3",
}

// interpreterMounts returns the bubblewrap arguments that make python's
// file system: systemRoots, etcFiles (and /etc/python3.*), and the
// interpreter's own prefixes outside the system folders (pythonRoots), each
// read-only. The folders above them that bwrap would create (/etc, and say
// /root and /root/.pyenv for pyenv's interpreters) are made first, empty
// but for the path to what is mounted, and traversable (0755) whoever the
// program runs as.
func interpreterMounts(python string) []string {
	var a []string
	for _, root := range systemRoots {
		fi, err := os.Lstat(root)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(root); err == nil {
				a = append(a, "--symlink", target, root)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", root, root)
		}
	}
	var binds []string
	etc := append([]string(nil), etcFiles...)
	if versioned, err := filepath.Glob("/etc/python3.*"); err == nil {
		etc = append(etc, versioned...)
	}
	for _, f := range etc {
		if _, err := os.Stat(f); err == nil {
			binds = append(binds, f)
		}
	}
	binds = append(binds, pythonRoots(python)...)
	var parents []string
	for _, b := range binds {
		for dir := filepath.Dir(b); dir != "/" && !slices.Contains(parents, dir); dir = filepath.Dir(dir) {
			parents = append(parents, dir)
		}
	}
	slices.Sort(parents) // a folder before those inside it
	for _, dir := range parents {
		if !underAny(dir, binds) {
			a = append(a, "--perms", "0755", "--dir", dir)
		}
	}
	for _, b := range binds {
		a = append(a, "--ro-bind-try", b, b) // -try: gone since we looked is no error
	}
	return a
}

// pythonRoots returns the folders outside systemRoots that python needs:
// its prefix (the folder above its bin/, where lib/pythonX.Y is) as named
// and with links resolved, and for a virtual environment (pyvenv.cfg) the
// base interpreter's prefix too. Nested folders are left out (their parent
// holds them), as is anything under systemRoots.
func pythonRoots(python string) []string {
	var cands []string
	add := func(exe string) {
		if !filepath.IsAbs(exe) {
			return
		}
		prefix := filepath.Dir(filepath.Dir(exe))
		if fi, err := os.Stat(filepath.Join(prefix, "lib")); err != nil || !fi.IsDir() {
			prefix = filepath.Dir(exe) // not a prefix's layout: the interpreter's own folder
		}
		cands = append(cands, prefix)
		for _, cfg := range []string{filepath.Join(filepath.Dir(exe), "pyvenv.cfg"), filepath.Join(prefix, "pyvenv.cfg")} {
			if home := venvHome(cfg); home != "" {
				cands = append(cands, filepath.Dir(home))
				if real, err := filepath.EvalSymlinks(home); err == nil {
					cands = append(cands, filepath.Dir(real))
				}
			}
		}
	}
	add(filepath.Clean(python))
	if real, err := filepath.EvalSymlinks(python); err == nil {
		add(real)
	}
	var roots []string
	for _, c := range cands {
		if c == "/" || underAny(c, systemRoots) {
			continue
		}
		roots = append(roots, c)
	}
	// Drop duplicates and folders inside another root.
	var out []string
	for _, r := range roots {
		if !underAny(r, without(roots, r)) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// venvHome returns the home (the base interpreter's bin folder) that the
// pyvenv.cfg at path names, or "" when there is none.
func venvHome(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 64<<10 {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "home" && filepath.IsAbs(strings.TrimSpace(v)) {
			return filepath.Clean(strings.TrimSpace(v))
		}
	}
	return ""
}

// underAny reports whether path is one of roots or inside one.
func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}

// without returns s less every element equal to x.
func without(s []string, x string) []string {
	var out []string
	for _, e := range s {
		if e != x {
			out = append(out, e)
		}
	}
	return out
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
)

// syscalls are the numbers of the system calls the filter names, per
// architecture.
type syscalls struct {
	audit uint32 // AUDIT_ARCH_*
	x32   bool   // the x32 ABI shares the architecture (amd64)
	clone uint32
	// refused answer EPERM: process creation (fork, vfork; clone is
	// checked apart), joining or making namespaces (unshare, setns), and
	// reaching into another process (ptrace, process_vm_readv/writev):
	// run by a user other than root, the sandbox's init (bwrap, PID 1 of
	// its namespace) has the program's uid, and a program that traced it
	// could make it drop its death-with-parent signal (outliving ndbg) or
	// allocate past the memory limit, which binds only the interpreter.
	refused []uint32
	// absent answer ENOSYS, as a kernel without them would, so that a
	// library falls back: clone3 (to clone), and kernel interfaces whose
	// state outlives the program or escapes its memory limit while no
	// standard-library module needs them: memfd_create (RAM-backed files
	// beside the one scratch tmpfs), System V shared memory, message
	// queues and semaphores, the key stores, io_uring, userfaultfd, BPF and
	// perf events.
	absent []uint32
}

// archSyscalls returns the numbers for the running architecture.
func archSyscalls() (syscalls, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return syscalls{audit: 0xC000003E, x32: true, clone: 56,
			refused: []uint32{57, 58, 272, 308, 101, 310, 311}, // fork, vfork, unshare, setns, ptrace, process_vm_readv, process_vm_writev
			// clone3, memfd_create, shmget, semget, msgget, add_key, request_key, keyctl, io_uring_setup, userfaultfd, bpf, perf_event_open
			absent: []uint32{435, 319, 29, 64, 68, 248, 249, 250, 425, 323, 321, 298}}, true
	case "arm64":
		return syscalls{audit: 0xC00000B7, clone: 220,
			refused: []uint32{97, 268, 117, 270, 271}, // unshare, setns, ptrace, process_vm_readv, process_vm_writev (no fork or vfork)
			absent:  []uint32{435, 279, 194, 190, 186, 217, 218, 219, 425, 282, 280, 241}}, true
	}
	return syscalls{}, false
}

// seccompFilter returns the classic-BPF program (struct sock_filter[], host
// byte order) that Command's sandbox loads: every system call of another
// architecture kills the process; archSyscalls' refused ones answer EPERM
// and its absent ones ENOSYS; clone is allowed only for threads
// (CLONE_THREAD); everything else is allowed.
func seccompFilter() ([]byte, error) {
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	sc, ok := archSyscalls()
	if !ok {
		return nil, &Error{Kind: ErrSandbox, Msg: "no seccomp filter for " + runtime.GOARCH + ": run without the sandbox only by asking for it (trace.Limits.Unsandboxed)"}
	}
	eperm := uint32(seccompRetErrno | uint32(syscall.EPERM))
	enosys := uint32(seccompRetErrno | uint32(syscall.ENOSYS))
	prog := []insn{
		{bpfLdWAbs, 0, 0, 4}, // seccomp_data.arch
		{bpfJeqK, 1, 0, sc.audit},
		{bpfRetK, 0, 0, seccompRetKill},
		{bpfLdWAbs, 0, 0, 0}, // seccomp_data.nr
	}
	if sc.x32 { // x32 system calls (nr | 0x40000000) would bypass the numbers below
		prog = append(prog, insn{bpfJgeK, 0, 1, 0x40000000}, insn{bpfRetK, 0, 0, eperm})
	}
	for _, nr := range sc.refused {
		prog = append(prog, insn{bpfJeqK, 0, 1, nr}, insn{bpfRetK, 0, 0, eperm})
	}
	for _, nr := range sc.absent {
		prog = append(prog, insn{bpfJeqK, 0, 1, nr}, insn{bpfRetK, 0, 0, enosys})
	}
	prog = append(prog,
		insn{bpfJeqK, 1, 0, sc.clone}, insn{bpfRetK, 0, 0, seccompRetAllow},
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
