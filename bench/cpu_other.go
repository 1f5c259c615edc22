//go:build !unix

package bench

import "time"

// cpuTime is not measured here: cpu_us_per_msg stays 0.
func cpuTime() (time.Duration, bool) { return 0, false }
