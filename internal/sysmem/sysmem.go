// Package sysmem says how much memory this process may use: the machine's
// physical memory, or less where a control group (a container's limit)
// caps it. Package model checks a model's allocations against it before
// making them, so that a checkpoint whose config asks for more than the
// machine has is an error, not Go's fatal out-of-memory.
package sysmem

// Total returns the bytes of memory this process may use, or 0 when the
// system does not say.
func Total() int64 {
	phys := physical()
	if lim := cgroupLimit(); lim > 0 && (phys <= 0 || lim < phys) {
		return lim
	}
	return phys
}
