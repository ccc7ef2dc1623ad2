package ndbg

import "time"

// RunCPU is, for tests and benchmarks, the CPU time the real session's
// current run had used by its current stop (0 on other backends).
func RunCPU(s *Session) time.Duration {
	if e, ok := s.eng.(*realEngine); ok {
		return e.runCPU()
	}
	return 0
}
