//go:build !unix

package script

import "time"

func setLimits(int64) {}

// processCPU reports no count: the CPU time of a call is not limited
// here, only its wall time.
func processCPU() (time.Duration, bool) { return 0, false }
