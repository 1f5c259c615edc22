package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// TestCLIBenchGroup runs parley bench --group briefly with groups of 2 and
// 3: one JSON record per size, every lane of every message acknowledged,
// and the CPU each lane took.
func TestCLIBenchGroup(t *testing.T) {
	cmd := exec.Command(parleyBin, "bench", "--group", "2,3", "--messages", "10", "--duration", "0", "--window", "4", "--json")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parley bench --group: %v", err)
	}
	type result struct {
		Members    int     `json:"members"`
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
		t.Fatalf("bench --group 2,3 printed %d records, want 2:\n%s", len(got), out)
	}
	for i, members := range []int{2, 3} {
		r := got[i]
		if r.Members != members || r.Messages != 10 || r.Lanes != 10*(members-1) || r.CPU <= 0 || r.MsgsPerSec <= 0 {
			t.Errorf("record %d: %+v; want %d members, 10 messages, %d lanes, CPU and a rate", i, r, members, 10*(members-1))
		}
	}
	if err := exec.Command(parleyBin, "bench", "--group", "1").Run(); err == nil {
		t.Error("bench --group 1 succeeded; a group has at least 2 members")
	}
}
