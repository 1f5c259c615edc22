package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/parley-chat/parley/bench"
)

func init() {
	register(&command{name: "bench", args: "[--messages N] [--window W] [--json]", summary: "end-to-end benchmark on loopback with production durability", run: cmdBench})
}

func cmdBench(ctx context.Context, env *cliEnv, args []string) error {
	f := newFlags(commands["bench"], env, false)
	n := f.Int("messages", 2000, "messages to send")
	window := f.Int("window", 64, "at most this many messages in flight")
	cpuProfile := f.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *cpuProfile != "" {
		out, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *n < 1 || *window < 1 {
		return usagef("--messages and --window must be positive")
	}
	progress := io.Writer(env.stderr)
	if *f.json {
		progress = io.Discard
	}
	res, err := bench.Run(ctx, *n, *window, progress)
	if err != nil {
		return err
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"messages", res.Messages}, {"seconds", res.Seconds}, {"msgs_per_sec", res.MsgsPerSec},
			{"p50_ms", res.P50ms}, {"p99_ms", res.P99ms}, {"durable_commits_per_sec", res.DurableCommitsPerSec},
			{"ratio", res.Ratio}, {"synchronous", res.Synchronous}, {"window", res.Window}})
		return nil
	}
	w := env.stdout
	fmt.Fprintf(w, "messages                 %d (window %d)\n", res.Messages, res.Window)
	fmt.Fprintf(w, "seconds                  %.3f\n", res.Seconds)
	fmt.Fprintf(w, "messages/s end to end    %.0f\n", res.MsgsPerSec)
	fmt.Fprintf(w, "latency p50 / p99        %.2f ms / %.2f ms (send to ACK cleared)\n", res.P50ms, res.P99ms)
	fmt.Fprintf(w, "durable commits/s        %.0f (synchronous=%s, same disk)\n", res.DurableCommitsPerSec, res.Synchronous)
	fmt.Fprintf(w, "ratio                    %.2f\n", res.Ratio)
	return nil
}
