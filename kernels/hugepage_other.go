//go:build !linux

package kernels

// AdviseHugePages does nothing outside Linux; see the Linux version.
func AdviseHugePages[T any](s []T) {}
