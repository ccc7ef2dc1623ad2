//go:build !cuda

package device

import (
	"errors"

	"github.com/ndbg/ndbg/model"
)

// CUDACompiled reports whether this build includes the CUDA device.
const CUDACompiled = false

// ErrNoCUDA is returned (wrapped) for the cuda device in a build without it.
var ErrNoCUDA = errors.New("this build has no CUDA support: build with -tags cuda on a machine with the CUDA headers (cuda/README.md)")

func openCUDA() (model.Device, error) { return nil, ErrNoCUDA }
