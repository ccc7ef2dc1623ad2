package kernels

import (
	"sync"
	"time"
)

// bandwidthBytes is the size of the array MeasureBandwidth reads: far
// larger than any cache.
const bandwidthBytes = 1 << 30

// MeasureBandwidth returns the machine's memory read bandwidth in GB/s
// (10⁹ bytes per second) with the given number of threads (≤ 0 means 1):
// each thread sums its own share of a freshly allocated 1 GiB array with the
// package's vectorized read kernel, and the best of three passes is kept.
// It takes about a second and 1 GiB of memory while it runs. Under the
// noasm tag the read kernel is plain Go and may fall short of the hardware.
func MeasureBandwidth(threads int) float64 {
	threads = max(threads, 1)
	x := make([]float32, bandwidthBytes/4)
	for i := range x { // touch every page before timing
		x[i] = 1
	}
	share := (len(x)/threads + 63) &^ 63
	best := 0.0
	sums := make([]float32, threads)
	for range 3 {
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			lo := min(t*share, len(x))
			hi := min(lo+share, len(x))
			wg.Add(1)
			go func() {
				defer wg.Done()
				sums[t] = readSum(x[lo:hi])
			}()
		}
		wg.Wait()
		if gbs := float64(len(x)*4) / time.Since(start).Seconds() / 1e9; gbs > best {
			best = gbs
		}
	}
	return best
}

// MeasureFMAPeak returns the machine's float32 FMA throughput in GFLOP/s
// (one FMA = 2 FLOP) with the given number of threads (≤ 0 means 1): each
// thread runs a loop of 12 independent vector FMAs (AVX-512 where present,
// else AVX2) for about 0.2 s. Under the noasm tag it measures scalar Go.
func MeasureFMAPeak(threads int) float64 {
	threads = max(threads, 1)
	const iters = 4 << 20
	best := 0.0
	for range 3 {
		flops := make([]float64, threads)
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				flops[t] = fmaLoop(iters)
			}()
		}
		wg.Wait()
		total := 0.0
		for _, f := range flops {
			total += f
		}
		if g := total / time.Since(start).Seconds() / 1e9; g > best {
			best = g
		}
	}
	return best
}

func readSumGo(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return s0 + s1 + s2 + s3
}

// fmaLoopGo is the scalar stand-in for the FMA loop: 8 independent chains.
func fmaLoopGo(iters int) float64 {
	var a [8]float32
	const m, c = 0.999, 0.001
	for range iters {
		for j := range a {
			a[j] = a[j]*m + c
		}
	}
	sink := a[0] + a[7]
	if sink != sink {
		return 0
	}
	return float64(iters) * 16
}
