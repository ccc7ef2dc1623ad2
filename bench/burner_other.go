//go:build !linux

package bench

import (
	"os/exec"
)

// killWithParent does nothing here: only Linux kills a child with its
// parent; stop and the context still end the burning process.
func killWithParent(*exec.Cmd) {}

// pinBurner does nothing here: the burning process is left where the
// scheduler puts it (it still takes one core's worth of time).
func pinBurner(pid, cpu int) error { return nil }
