package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestCLIBenchFile: parley bench --file moves a small file through its
// relay and reports every rate and the memory growth as positive numbers.
func TestCLIBenchFile(t *testing.T) {
	out, err := exec.Command(parleyBin, "bench", "--file", "1MiB", "--chunk", "16384", "--json").Output()
	if err != nil {
		t.Fatalf("parley bench --file: %v", err)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("bench --file --json printed %q: %v", out, err)
	}
	if r["bytes"] != float64(1<<20) || r["chunk_size"] != float64(16384) || r["limits"] != "off" {
		t.Errorf("bench --file: bytes %v, chunk_size %v, limits %v; want 1048576, 16384, off", r["bytes"], r["chunk_size"], r["limits"])
	}
	for _, k := range []string{"upload_mb_per_sec", "download_mb_per_sec", "end_to_end_mb_per_sec", "raw_ws_stream_mb_per_sec",
		"raw_ws_round_trip_mb_per_sec", "synced_write_mb_per_sec", "upload_ratio", "download_ratio", "cpu_seconds"} {
		if v, ok := r[k].(float64); !ok || v <= 0 {
			t.Errorf("bench --file: %s = %v, want a positive number", k, r[k])
		}
	}
	if r["rss_measured"] == true {
		if v, ok := r["rss_growth_mib"].(float64); !ok || v < 0 {
			t.Errorf("bench --file: rss_growth_mib = %v, want a number", r["rss_growth_mib"])
		}
	}
	if r := exec.Command(parleyBin, "bench", "--file", "1MiB", "--pairs", "2"); r.Run() == nil || r.ProcessState.ExitCode() != 2 {
		t.Errorf("bench --file with --pairs: want a usage error (exit 2)")
	}
}
