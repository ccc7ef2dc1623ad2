//go:build noasm || !amd64

package kernels

func readSum(x []float32) float32 { return readSumGo(x) }

func fmaLoop(iters int) float64 { return fmaLoopGo(iters) }

// spinPause is the spin-wait hint of a Pool; there is none without assembly.
func spinPause() {}

// prefetchRange does nothing without assembly (see the amd64 one).
func prefetchRange(p *byte, n int) {}
