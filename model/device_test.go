package model_test

import (
	"testing"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/model/modeltest"
)

// TestCPUConformance runs the device conformance suite (the one package
// cuda runs on a GPU) on every assembly kernels implementation this CPU
// has (the pure-Go one is the suite's reference), with F32, BF16 and
// quantized weights, and on the BF16-activation products of NewCPUFast.
func TestCPUConformance(t *testing.T) {
	for _, k := range kernels.Impls()[1:] {
		t.Run(k.Name(), func(t *testing.T) {
			dev := model.NewCPUWith(k, 2)
			defer dev.Close()
			modeltest.Run(t, dev)
			modeltest.RunQuant(t, dev)
		})
	}
	t.Run("fast", func(t *testing.T) {
		dev := model.NewCPUFast(2)
		defer dev.Close()
		modeltest.Run(t, dev)
	})
}
