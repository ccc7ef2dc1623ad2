//go:build cuda

package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	ptx "github.com/ndbg/ndbg/kernels/cuda"
)

// ErrOutOfMemory is returned (wrapped) when a device allocation fails for
// lack of memory.
var ErrOutOfMemory = errors.New("cuda: out of device memory")

// device is one CUDA context with the kernel modules loaded. Driver calls
// are made with the context current on a locked OS thread (Do); mu
// serialises them, so a device is safe for concurrent use.
type device struct {
	mu      sync.Mutex
	dev     cu.Device
	ctx     cu.CUContext
	name    string
	sm      int // compute capability, major*10+minor
	sms     int // multiprocessors
	memBW   float64
	mods    []cu.Module
	fns     map[string]cu.Function
	closed  bool
	lastErr error
}

// devInfo is what the benchmarks report about the GPU.
type devInfo struct {
	Name        string
	SM          int     // compute capability ×10 (90 for H100)
	SMs         int     // multiprocessors
	PeakBWGBs   float64 // theoretical DRAM bandwidth from clock and bus width
	TotalMemGiB float64
}

// openDevice creates a context on GPU ordinal and loads the PTX for its
// architecture (sm_90 for compute capability ≥ 9.0, else sm_80; the driver
// JIT-compiles PTX to the GPU's own ISA). Devices below sm_80 are refused:
// the prefill GEMM needs bf16 tensor cores.
func openDevice(ordinal int) (*device, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGetCount: %w", err)
	}
	if n == 0 {
		return nil, errors.New("cuda: no CUDA device")
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d of %d", ordinal, n)
	}
	d := &device{fns: map[string]cu.Function{}}
	if d.dev, err = cu.GetDevice(ordinal); err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGet(%d): %w", ordinal, err)
	}
	if d.name, err = d.dev.Name(); err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGetName: %w", err)
	}
	attr := func(a cu.DeviceAttribute) int {
		v, e := d.dev.Attribute(a)
		if e != nil && err == nil {
			err = fmt.Errorf("cuda: cuDeviceGetAttribute(%d): %w", a, e)
		}
		return v
	}
	d.sm = attr(cu.ComputeCapabilityMajor)*10 + attr(cu.ComputeCapabilityMinor)
	d.sms = attr(cu.MultiprocessorCount)
	clockKHz, busBits := attr(cu.MemoryClockRate), attr(cu.GlobalMemoryBusWidth)
	if err != nil {
		return nil, err
	}
	d.memBW = 2 * float64(clockKHz) * 1e3 * float64(busBits) / 8 / 1e9
	if d.sm < 80 {
		return nil, fmt.Errorf("cuda: %s has compute capability %d.%d; sm_80 or newer is needed", d.name, d.sm/10, d.sm%10)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.ctx, err = d.dev.MakeContext(cu.SchedBlockingSync); err != nil {
		return nil, fmt.Errorf("cuda: cuCtxCreate: %w", err)
	}
	arch := "sm_80"
	if d.sm >= 90 {
		arch = "sm_90"
	}
	for _, name := range ptx.Modules {
		src, err := ptx.PTX(name, arch)
		if err != nil {
			return nil, errors.Join(err, d.destroy())
		}
		mod, err := cu.LoadData(src)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("cuda: cuModuleLoadData(%s.%s.ptx): %w%s", name, arch, err, jitLog(src)), d.destroy())
		}
		d.mods = append(d.mods, mod)
		for _, fn := range ptx.Functions(src) {
			f, err := mod.Function(fn)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("cuda: cuModuleGetFunction(%s): %w", fn, err), d.destroy())
			}
			d.fns[fn] = f
		}
	}
	if err := cu.SetCurrentContext(cu.CUContext{}); err != nil {
		return nil, errors.Join(fmt.Errorf("cuda: cuCtxSetCurrent(nil): %w", err), d.destroy())
	}
	return d, nil
}

// jitLog loads src again with the JIT's error log enabled, after a failed
// cuModuleLoadData, and returns the log (": " + text) so the error says
// what the driver's PTX compiler rejected.
func jitLog(src string) string {
	log := &cu.JITErrorLogBuffer{Buffer: make([]byte, 8192)}
	mod, err := cu.LoadDataEx(src, log)
	if err == nil {
		_ = mod.Unload()
		return ""
	}
	if i := bytes.IndexByte(log.Buffer, 0); i >= 0 {
		log.Buffer = log.Buffer[:i]
	}
	if len(log.Buffer) == 0 {
		return ""
	}
	return ": " + string(log.Buffer)
}

// info returns the device's description.
func (d *device) info() devInfo {
	var total int64
	_ = d.do(func() error {
		var err error
		_, total, err = cu.MemInfo()
		return err
	})
	return devInfo{Name: d.name, SM: d.sm, SMs: d.sms, PeakBWGBs: d.memBW, TotalMemGiB: float64(total) / (1 << 30)}
}

// destroy unloads the modules and destroys the context (called with the
// context current or on failure paths).
func (d *device) destroy() error {
	var errs []error
	for _, m := range d.mods {
		if err := m.Unload(); err != nil {
			errs = append(errs, fmt.Errorf("cuda: cuModuleUnload: %w", err))
		}
	}
	d.mods = nil
	if err := d.ctx.Destroy(); err != nil {
		errs = append(errs, fmt.Errorf("cuda: cuCtxDestroy: %w", err))
	}
	return errors.Join(errs...)
}

// do runs f with the device's context current on a locked OS thread,
// holding the device's lock.
func (d *device) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("cuda: device closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cuda: cuCtxSetCurrent: %w", err)
	}
	return f()
}

// close destroys the context; later calls fail.
func (d *device) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cuda: cuCtxSetCurrent: %w", err)
	}
	return d.destroy()
}

// buffer is a device allocation.
type buffer struct {
	ptr   cu.DevicePtr
	bytes int64
}

// alloc allocates bytes of device memory (context current). Out of memory
// is reported as ErrOutOfMemory.
func alloc(bytes int64, what string) (buffer, error) {
	if bytes <= 0 {
		bytes = 256 // a valid pointer for empty operands
	}
	p, err := cu.MemAlloc(bytes)
	if err != nil {
		if errors.Is(err, cu.OutOfMemory) {
			return buffer{}, fmt.Errorf("cuda: cuMemAlloc(%d bytes) for %s: %w (%v)", bytes, what, ErrOutOfMemory, err)
		}
		return buffer{}, fmt.Errorf("cuda: cuMemAlloc(%d bytes) for %s: %w", bytes, what, err)
	}
	return buffer{ptr: p, bytes: bytes}, nil
}

// free releases b (context current); the zero buffer is ignored.
func (b *buffer) free() error {
	if b.ptr == 0 {
		return nil
	}
	err := cu.MemFree(b.ptr)
	*b = buffer{}
	if err != nil {
		return fmt.Errorf("cuda: cuMemFree: %w", err)
	}
	return nil
}

// scratch is a grow-only device buffer reused across calls.
type scratch struct {
	buffer
	what string
}

// need returns a buffer of at least bytes, reallocating when too small
// (after the queued work that may still read the old one).
func (s *scratch) need(bytes int64) (cu.DevicePtr, error) {
	if s.ptr != 0 && s.bytes >= bytes {
		return s.ptr, nil
	}
	if s.ptr != 0 {
		if err := syncDevice("growing " + s.what); err != nil {
			return 0, err
		}
	}
	if err := s.free(); err != nil {
		return 0, err
	}
	b, err := alloc(max(bytes, 1<<16), s.what)
	if err != nil {
		return 0, err
	}
	s.buffer = b
	return s.ptr, nil
}

// upload copies a host slice to dst (context current).
func upload[T any](dst cu.DevicePtr, src []T, what string) error {
	if len(src) == 0 {
		return nil
	}
	bytes := int64(len(src)) * int64(unsafe.Sizeof(src[0]))
	if err := cu.MemcpyHtoD(dst, unsafe.Pointer(unsafe.SliceData(src)), bytes); err != nil {
		return fmt.Errorf("cuda: cuMemcpyHtoD(%s, %d bytes): %w", what, bytes, err)
	}
	return nil
}

// download copies device memory at src into a host slice (context current).
func download[T any](dst []T, src cu.DevicePtr, what string) error {
	if len(dst) == 0 {
		return nil
	}
	bytes := int64(len(dst)) * int64(unsafe.Sizeof(dst[0]))
	if err := cu.MemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), src, bytes); err != nil {
		return fmt.Errorf("cuda: cuMemcpyDtoH(%s, %d bytes): %w", what, bytes, err)
	}
	return nil
}

// launch starts kernel name on the default stream (context current). args
// are cu.DevicePtr, int (a 32-bit int parameter), int64, uint32 or float32;
// each travels in an 8-byte slot, as
// gorgonia.org/cu's Launch copies 8 bytes per parameter (a 4-byte int or
// float kernel parameter reads the slot's low half, little-endian).
func (d *device) launch(name string, grid, block [3]int, shared int, args ...any) error {
	fn, ok := d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s not in the loaded PTX", name)
	}
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			slots[i] = uint64(v)
		case int:
			if v < math.MinInt32 || v > math.MaxInt32 {
				return fmt.Errorf("cuda: %s argument %d = %d overflows int32", name, i, v)
			}
			slots[i] = uint64(uint32(int32(v)))
		case int64: // a long long kernel parameter
			slots[i] = uint64(v)
		case uint32:
			slots[i] = uint64(v)
		case float32:
			slots[i] = uint64(math.Float32bits(v))
		default:
			return fmt.Errorf("cuda: %s argument %d has type %T", name, i, a)
		}
		params[i] = unsafe.Pointer(&slots[i])
	}
	for _, g := range grid {
		if g <= 0 {
			return nil // empty launch: nothing to do
		}
	}
	if err := fn.Launch(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, cu.Stream{}, params); err != nil {
		return fmt.Errorf("cuda: cuLaunchKernel(%s, grid %v, block %v): %w", name, grid, block, err)
	}
	runtime.KeepAlive(slots)
	return nil
}

// sync waits for the device (context current).
func syncDevice(what string) error {
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("cuda: cuCtxSynchronize after %s: %w", what, err)
	}
	return nil
}

// grid1 is a one-dimensional grid.
func grid1(x int) [3]int { return [3]int{x, 1, 1} }

// ceilDiv returns ⌈a/b⌉.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// devPtr is a device address.
type devPtr = cu.DevicePtr
