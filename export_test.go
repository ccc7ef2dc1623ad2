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

// Parked is, for tests, the event the real session's run parked ahead
// stands at (realpark.go), once it got there; -1 when there is none.
func Parked(s *Session) int {
	e, ok := s.eng.(*realEngine)
	if !ok || e.park == nil {
		return -1
	}
	<-e.park.done
	if e.park.err != nil || e.park.stop == nil {
		return -1
	}
	return e.park.stop.Index
}

// ParkHits is, for tests, how many replays of the real session resumed a
// run parked ahead.
func ParkHits(s *Session) int {
	if e, ok := s.eng.(*realEngine); ok {
		return e.parkHit
	}
	return 0
}
