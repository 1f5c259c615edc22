package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestCLIBenchDevices runs parley bench --devices 2 briefly: one JSON
// record for the person of one device and one for the person of two, each
// message acknowledged by every device of its person, with the CPU each
// lane took.
func TestCLIBenchDevices(t *testing.T) {
	cmd := exec.Command(parleyBin, "bench", "--devices", "2", "--messages", "20", "--duration", "0", "--window", "8", "--json")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parley bench --devices 2: %v\n%s", err, stderr.String())
	}
	type result struct {
		Devices    int     `json:"devices"`
		Messages   int     `json:"messages"`
		Lanes      int     `json:"lanes"`
		CPU        float64 `json:"cpu_us_per_lane"`
		MsgsPerSec float64 `json:"msgs_per_sec"`
	}
	var got []result
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bench output %q: %v", out, err)
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("bench --devices 2 printed %d records, want 2:\n%s", len(got), out)
	}
	for i, devices := range []int{1, 2} {
		r := got[i]
		if r.Devices != devices || r.Messages < 20 || r.Lanes != r.Messages*devices || r.CPU <= 0 || r.MsgsPerSec <= 0 {
			t.Errorf("record %d: %+v; want %d devices, at least 20 messages, a lane per device each, CPU and a rate", i, r, devices)
		}
	}
	if err := exec.Command(parleyBin, "bench", "--devices", "1").Run(); err == nil {
		t.Error("bench --devices 1 succeeded; it measures 2 or more")
	}
}
