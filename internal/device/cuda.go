//go:build cuda

package device

import (
	"github.com/ndbg/ndbg/cuda"
	"github.com/ndbg/ndbg/model"
)

// CUDACompiled reports whether this build includes the CUDA device.
const CUDACompiled = true

// openCUDA opens GPU 0.
func openCUDA() (model.Device, error) { return cuda.New(cuda.Options{}) }
