package kernels

import "math"

// FMALoop exposes the FMA peak loop to the benchmarks: it runs iters
// iterations and returns the FLOPs done.
func FMALoop(iters int) float64 { return fmaLoop(iters) }

func math32(b uint32) float32 { return math.Float32frombits(b) }
