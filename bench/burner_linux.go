package bench

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// killWithParent has the kernel kill the burning process if this process
// dies before it could (it must never be left running).
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// pinBurner restricts process pid to CPU cpu (sched_setaffinity), so that
// it keeps exactly one core busy.
func pinBurner(pid, cpu int) error {
	var mask [16]uint64 // 1024 CPUs
	if cpu < 0 || cpu >= 64*len(mask) {
		return nil
	}
	mask[cpu/64] = 1 << (cpu % 64)
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(pid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
