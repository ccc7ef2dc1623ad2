package kernels

import (
	"sync"
	"time"
)

// bandwidthBytes is the size of the array MeasureBandwidth reads: far
// larger than any cache.
const bandwidthBytes = 1 << 30

// BandwidthPattern is one way of reading memory that MeasureBandwidths
// times: each thread reads its share of a segment as Streams concurrent
// sequential streams, taking ChunkBytes from each stream in turn.
type BandwidthPattern struct {
	Name       string
	Streams    int
	ChunkBytes int
}

// bandwidthPatterns are the read patterns MeasureBandwidth takes the best
// of: one sequential stream per thread, as a streaming benchmark reads, and
// several streams advancing together, as a GEMV reads several weight rows
// at once (hardware prefetchers track a handful of streams, and which
// pattern the memory system serves fastest differs between CPUs).
var bandwidthPatterns = []BandwidthPattern{
	{Name: "1 stream", Streams: 1, ChunkBytes: 64 << 20},
	{Name: "4 streams, 4 KiB chunks", Streams: 4, ChunkBytes: 4 << 10},
	{Name: "8 streams, 2 KiB chunks", Streams: 8, ChunkBytes: 2 << 10},
	{Name: "2 streams, 64 KiB chunks", Streams: 2, ChunkBytes: 64 << 10},
}

// BandwidthMeasurement is one pattern's measured read rate.
type BandwidthMeasurement struct {
	Pattern BandwidthPattern
	GBs     float64
}

// MeasureBandwidth returns the machine's memory read bandwidth in GB/s
// (10⁹ bytes per second) with the given number of threads (≤ 0 means 1):
// the best of MeasureBandwidths' patterns, so that no engine's weight
// reads can honestly exceed "100% of bandwidth" through a pattern the
// measurement did not try. It takes a few seconds and 1 GiB of memory
// while it runs. Under the noasm tag the read kernel is plain Go and may
// fall short of the hardware.
func MeasureBandwidth(threads int) float64 {
	best := 0.0
	for _, m := range MeasureBandwidths(threads) {
		best = max(best, m.GBs)
	}
	return best
}

// MeasureBandwidths times every read pattern with the given number of
// threads. Each reads a freshly allocated 1 GiB array in 64 MiB segments
// (each twice the L3 and read a full gigabyte after its last visit, so it
// comes from memory), the threads summing their share of a segment in
// parallel with the package's vectorized read kernel; the fastest segment
// gives the pattern's figure. The best segment rather than the mean keeps
// the figure stable when other processes share the cores.
func MeasureBandwidths(threads int) []BandwidthMeasurement {
	threads = max(threads, 1)
	x := make([]float32, bandwidthBytes/4)
	for i := range x { // touch every page before timing
		x[i] = 1
	}
	out := make([]BandwidthMeasurement, len(bandwidthPatterns))
	for i, p := range bandwidthPatterns {
		out[i] = BandwidthMeasurement{Pattern: p, GBs: readRate(x, threads, p)}
	}
	return out
}

// readRate is the best GB/s over the 64 MiB segments of x, read by threads
// goroutines with pattern p.
func readRate(x []float32, threads int, p BandwidthPattern) float64 {
	const segBytes = 64 << 20
	seg := segBytes / 4
	share := (seg/threads + 63) &^ 63
	sums := make([]float32, threads)
	best := 0.0
	for s0 := 0; s0 < len(x); s0 += seg {
		var wg sync.WaitGroup
		start := time.Now()
		for t := range threads {
			lo := min(s0+t*share, s0+seg)
			hi := min(lo+share, s0+seg)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sums[t] += readStreams(x[lo:hi], p.Streams, p.ChunkBytes/4)
			}()
		}
		wg.Wait()
		if gbs := float64(segBytes) / time.Since(start).Seconds() / 1e9; gbs > best {
			best = gbs
		}
	}
	return best
}

// readStreams sums x read as streams equal parts advancing together, chunk
// elements from each part in turn; every element is read once.
func readStreams(x []float32, streams, chunk int) float32 {
	if streams <= 1 || chunk <= 0 {
		return readSum(x)
	}
	part := (len(x) + streams - 1) / streams
	var s float32
	for off := 0; off < part; off += chunk {
		for k := range streams {
			lo := min(k*part+off, len(x))
			hi := min(lo+min(chunk, part-off), (k+1)*part, len(x))
			s += readSum(x[lo:hi])
		}
	}
	return s
}

// MeasureFMAPeak returns the machine's float32 FMA throughput in GFLOP/s
// (one FMA = 2 FLOP) with the given number of threads (≤ 0 means 1): each
// thread runs a loop of 12 independent vector FMAs (AVX-512 where present,
// else AVX2); the best of 20 short runs (about 10 ms each) gives the figure.
// Under the noasm tag it measures scalar Go.
func MeasureFMAPeak(threads int) float64 {
	threads = max(threads, 1)
	const iters = 256 << 10
	best := 0.0
	for range 20 {
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
