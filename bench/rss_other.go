//go:build !linux

package bench

// The resident size is read from /proc: elsewhere rss_growth_mib stays 0.
func residentBytes() (int64, bool)     { return 0, false }
func peakResidentBytes() (int64, bool) { return 0, false }
func resetPeakResident()               {}
