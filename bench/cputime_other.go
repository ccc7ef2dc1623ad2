//go:build !unix

package bench

import "time"

// ProcessCPU is unavailable here: it returns 0, and CPU shares are then
// reported as 0.
func ProcessCPU() time.Duration { return 0 }
