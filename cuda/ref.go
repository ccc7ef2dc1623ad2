package cuda

import "math"

// CPU references for the kernels that package kernels does not cover
// (in the manner of llm.c's dev/cuda, where each kernel file starts with
// its CPU version). They are written for clarity, in float64 where it
// matters, and need no GPU: the default build compiles and tests them.
// RoPE's reference is model.RopeTable, whose tables the GPU uploads;
// attention's is kerneltest.RefAttention; argmax's is sample.Argmax.

// RefApplyMask sets logits[i] = -Inf where bit i of mask (bit i%32 of word
// i/32) is clear.
func RefApplyMask(logits []float32, mask []uint32) {
	for i := range logits {
		if mask[i/32]>>(i%32)&1 == 0 {
			logits[i] = float32(math.Inf(-1))
		}
	}
}
