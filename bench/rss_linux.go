//go:build linux

package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// residentBytes is the process's resident set size (VmRSS).
func residentBytes() (int64, bool) { return statusBytes("VmRSS:") }

// peakResidentBytes is the process's peak resident set size since the
// last resetPeakResident (VmHWM).
func peakResidentBytes() (int64, bool) { return statusBytes("VmHWM:") }

// resetPeakResident sets VmHWM to the current resident size (Linux 4.0
// and later; a failure leaves the sampled peak to stand alone).
func resetPeakResident() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// statusBytes reads a "Name:  N kB" line of /proc/self/status.
func statusBytes(name string) (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, name))
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
