//go:build !linux

package sysmem

// physical is unknown here: no check is made.
func physical() int64 { return 0 }

// cgroupLimit: control groups are Linux's.
func cgroupLimit() int64 { return 0 }
