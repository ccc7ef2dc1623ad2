// Package device chooses where the model computes, from the name a user
// gives (ndbg.Options.Device, the commands' --device flag): "cpu", "cuda"
// or "auto". The CUDA device is compiled in only under the cuda build tag
// (package cuda links the CUDA driver); without it, asking for cuda is an
// error that says how to get it, and auto is the CPU.
package device

import (
	"fmt"
	"strings"

	"github.com/ndbg/ndbg/model"
)

// The device names.
const (
	CPU  = "cpu"  // this machine's cores (package kernels)
	CUDA = "cuda" // an NVIDIA GPU (package cuda, build tag cuda)
	Auto = "auto" // cuda when compiled in and a GPU is present, else cpu
)

// Names lists the device names, as a usage line writes them.
const Names = CPU + "|" + CUDA + "|" + Auto

// Check rejects a name that is not a device ("" is the CPU).
func Check(name string) error {
	switch name {
	case "", CPU, CUDA, Auto:
		return nil
	}
	return fmt.Errorf("device %q: want %s", name, strings.ReplaceAll(Names, "|", ", "))
}

// Open returns the device name chooses, which the caller (or the model
// given it with model.Options.CloseDevice) closes. For the CPU it returns
// nil: a model builds its own CPU device from model.Options.Threads and
// FastBF16.
func Open(name string) (model.Device, error) {
	if err := Check(name); err != nil {
		return nil, err
	}
	switch name {
	case CUDA:
		g, err := openCUDA()
		if err != nil {
			return nil, fmt.Errorf("device cuda: %w", err)
		}
		return g, nil
	case Auto:
		if !CUDACompiled {
			return nil, nil
		}
		if g, err := openCUDA(); err == nil {
			return g, nil
		}
	}
	return nil, nil
}
