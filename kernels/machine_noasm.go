//go:build noasm || !amd64

package kernels

func readSum(x []float32) float32 { return readSumGo(x) }

func fmaLoop(iters int) float64 { return fmaLoopGo(iters) }

// f32ToBF16Vec converts nothing without assembly (see the amd64 one).
func f32ToBF16Vec(dst []uint16, src []float32) int { return 0 }

// spinPause is the spin-wait hint of a Pool; there is none without assembly.
func spinPause() {}

// prefetchRange does nothing without assembly (see the amd64 one).
func prefetchRange(p *byte, n int) {}
