package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/bench"
)

func cmdBench(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, false)
	duration := f.Duration("duration", 5*time.Second, "send for at least this long (runs shorter than a few seconds measure noise)")
	n := f.Int("messages", 0, "send at least this many messages, over all pairs")
	pairs := f.Int("pairs", 1, "conversations, each between two profiles of its own, on one relay")
	window := f.Int("window", 64, "at most this many messages in flight per pair")
	cpuProfile := f.String("cpuprofile", "", "write a CPU profile of the measured part of the run to this file")
	group := f.String("group", "", "measure group sends instead: comma-separated group sizes, the sender included (2,10,50), each run in turn")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *group != "" {
		if *pairs != 1 || *cpuProfile != "" {
			return usagef("--group measures one sender: --pairs and --cpuprofile do not apply")
		}
		sizes, err := parseSizes(*group)
		if err != nil {
			return err
		}
		if *n < 0 || *window < 1 || *duration < 0 || *n == 0 && *duration == 0 {
			return usagef("--window must be positive, and --messages or --duration must be")
		}
		return benchGroup(ctx, env, *f.json, bench.GroupOptions{Sizes: sizes, Messages: *n, Duration: *duration, Window: *window})
	}
	if *n < 0 || *window < 1 || *pairs < 1 || *duration < 0 || *n == 0 && *duration == 0 {
		return usagef("--window and --pairs must be positive, and --messages or --duration must be")
	}
	var profile io.Writer
	if *cpuProfile != "" {
		out, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer out.Close()
		profile = out
	}
	progress := io.Writer(env.stderr)
	if *f.json {
		progress = io.Discard
	}
	res, err := bench.Run(ctx, bench.Options{Messages: *n, Duration: *duration, Window: *window, Pairs: *pairs, Progress: progress, CPUProfile: profile})
	if err != nil {
		return err
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"messages", res.Messages}, {"seconds", res.Seconds}, {"msgs_per_sec", res.MsgsPerSec},
			{"p50_ms", res.P50ms}, {"p99_ms", res.P99ms}, {"durable_commits_per_sec", res.DurableCommitsPerSec},
			{"ratio", res.Ratio}, {"cpu_us_per_msg", res.CPUMicrosPerMsg}, {"synchronous", res.Synchronous},
			{"window", res.Window}, {"pairs", res.Pairs}})
		return nil
	}
	w := env.stdout
	fmt.Fprintf(w, "messages                 %d (%d pairs, window %d each)\n", res.Messages, res.Pairs, res.Window)
	fmt.Fprintf(w, "seconds                  %.3f\n", res.Seconds)
	fmt.Fprintf(w, "messages/s end to end    %.0f\n", res.MsgsPerSec)
	fmt.Fprintf(w, "latency p50 / p99        %.2f ms / %.2f ms (send to ACK cleared)\n", res.P50ms, res.P99ms)
	fmt.Fprintf(w, "CPU per message          %.0f µs (both clients, the relay and the cryptography)\n", res.CPUMicrosPerMsg)
	fmt.Fprintf(w, "durable commits/s        %.0f (synchronous=%s, same disk)\n", res.DurableCommitsPerSec, res.Synchronous)
	fmt.Fprintf(w, "ratio                    %.2f\n", res.Ratio)
	return nil
}

// parseSizes reads --group's list of sizes.
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, usagef("--group %q: want sizes of at least 2, such as 2,10,50", list)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// benchGroup is parley bench --group: one line (or JSON record) per size.
func benchGroup(ctx context.Context, env *cliEnv, asJSON bool, o bench.GroupOptions) error {
	o.Progress = env.stderr
	if asJSON {
		o.Progress = io.Discard
	}
	results, err := bench.RunGroup(ctx, o)
	if err != nil {
		return err
	}
	w := env.stdout
	if !asJSON {
		fmt.Fprintf(w, "%7s %8s %7s %7s %9s %11s %14s\n", "members", "messages", "lanes", "msgs/s", "lanes/s", "p50/p99 ms", "CPU/lane µs")
	}
	for _, r := range results {
		if asJSON {
			printer{w, true}.record([]kv{{"members", r.Members}, {"messages", r.Messages}, {"lanes", r.Lanes}, {"seconds", r.Seconds},
				{"msgs_per_sec", r.MsgsPerSec}, {"lanes_per_sec", r.LanesPerSec}, {"p50_ms", r.P50ms}, {"p99_ms", r.P99ms},
				{"cpu_us_per_lane", r.CPUMicrosPerLane}, {"window", r.Window}})
			continue
		}
		fmt.Fprintf(w, "%7d %8d %7d %7.0f %9.0f %11s %14.0f\n", r.Members, r.Messages, r.Lanes, r.MsgsPerSec, r.LanesPerSec,
			fmt.Sprintf("%.0f/%.0f", r.P50ms, r.P99ms), r.CPUMicrosPerLane)
	}
	return nil
}
