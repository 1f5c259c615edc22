package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/parley-chat/parley/bench"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

func cmdBench(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, false)
	duration := f.Duration("duration", 5*time.Second, "send for at least this long (runs shorter than a few seconds measure noise)")
	n := f.Int("messages", 0, "send at least this many messages, over all pairs")
	pairs := f.Int("pairs", 1, "conversations, each between two profiles of its own, on one relay")
	window := f.Int("window", 64, "at most this many messages in flight per pair")
	cpuProfile := f.String("cpuprofile", "", "write a CPU profile of the measured part of the run to this file")
	group := f.String("group", "", "measure group sends instead: comma-separated group sizes, the sender included (2,10,50), each run in turn")
	file := f.String("file", "", "measure a file transfer instead: one file of this size (100MiB, 1GiB) sent and fetched through a relay on SQLite, against raw websocket loopback")
	fileChunk := f.Int("chunk", engine.DefaultFileChunkSize, "with --file: the upload's chunk size in bytes")
	defaultLimits := f.Bool("default-limits", false, "with --file: run the relay with its default rate limits (byte buckets on) instead of with them off")
	history := f.Int("history", 0, "measure a backup and its restore, and a link with --history all, instead: a history of this many messages (10000)")
	devices := f.Int("devices", 0, "measure sends to a person of this many devices instead, against one device, in one run (2)")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *devices != 0 {
		if *history != 0 || *file != "" || *group != "" || *pairs != 1 || *cpuProfile != "" {
			return usagef("--devices measures one sender and two people: --history, --file, --group, --pairs and --cpuprofile do not apply")
		}
		if *devices < 2 || *devices > engine.MaxDevicesPerAccount {
			return usagef("--devices %d: want 2 to %d", *devices, engine.MaxDevicesPerAccount)
		}
		if *n < 0 || *window < 1 || *duration < 0 || *n == 0 && *duration == 0 {
			return usagef("--window must be positive, and --messages or --duration must be")
		}
		return benchDevices(ctx, env, *f.json, bench.DevicesOptions{Devices: *devices, Messages: *n, Duration: *duration, Window: *window})
	}
	if *history != 0 {
		if *file != "" || *group != "" || *pairs != 1 || *n != 0 {
			return usagef("--history measures one backup and restore: --file, --group, --pairs and --messages do not apply")
		}
		return benchHistory(ctx, env, *f.json, *history)
	}
	if *file != "" {
		if *group != "" || *pairs != 1 || *n != 0 {
			return usagef("--file measures one transfer: --group, --pairs and --messages do not apply")
		}
		size, err := humanize.ParseBytes(*file)
		if err != nil || size == 0 || size > 1<<40 {
			return usagef("--file %q: want a size such as 100MiB, at most 1TiB", *file)
		}
		if *fileChunk < wire.MinFileChunkSize || *fileChunk > wire.MaxFileChunkSize {
			return usagef("--chunk %d: want %d to %d bytes", *fileChunk, wire.MinFileChunkSize, wire.MaxFileChunkSize)
		}
		return benchFile(ctx, env, *f.json, *cpuProfile, bench.FileOptions{Size: int64(size), ChunkSize: uint32(*fileChunk), DefaultLimits: *defaultLimits})
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

// benchDevices is parley bench --devices: one line (or JSON record) for
// the person of one device, one for the person of several.
func benchDevices(ctx context.Context, env *cliEnv, asJSON bool, o bench.DevicesOptions) error {
	o.Progress = env.stderr
	if asJSON {
		o.Progress = io.Discard
	}
	results, err := bench.RunDevices(ctx, o)
	if err != nil {
		return err
	}
	w := env.stdout
	if !asJSON {
		fmt.Fprintf(w, "%7s %8s %7s %7s %9s %11s %14s\n", "devices", "messages", "lanes", "msgs/s", "lanes/s", "p50/p99 ms", "CPU/lane µs")
	}
	for _, r := range results {
		if asJSON {
			printer{w, true}.record([]kv{{"devices", r.Devices}, {"messages", r.Messages}, {"lanes", r.Lanes}, {"seconds", r.Seconds},
				{"msgs_per_sec", r.MsgsPerSec}, {"lanes_per_sec", r.LanesPerSec}, {"p50_ms", r.P50ms}, {"p99_ms", r.P99ms},
				{"cpu_us_per_lane", r.CPUMicrosPerLane}, {"window", r.Window}})
			continue
		}
		fmt.Fprintf(w, "%7d %8d %7d %7.0f %9.0f %11s %14.0f\n", r.Devices, r.Messages, r.Lanes, r.MsgsPerSec, r.LanesPerSec,
			fmt.Sprintf("%.0f/%.0f", r.P50ms, r.P99ms), r.CPUMicrosPerLane)
	}
	return nil
}

// benchFile is parley bench --file: one transfer's rates, the raw
// websocket rates of the same run, and the memory growth.
func benchFile(ctx context.Context, env *cliEnv, asJSON bool, cpuProfile string, o bench.FileOptions) error {
	o.Progress = env.stderr
	if asJSON {
		o.Progress = io.Discard
	}
	if cpuProfile != "" {
		out, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer out.Close()
		o.CPUProfile = out
	}
	r, err := bench.RunFile(ctx, o)
	if err != nil {
		return err
	}
	if asJSON {
		printer{env.stdout, true}.record([]kv{{"bytes", r.Bytes}, {"chunk_size", r.ChunkSize}, {"limits", r.Limits},
			{"upload_mb_per_sec", r.UploadMBs}, {"download_mb_per_sec", r.DownloadMBs}, {"end_to_end_mb_per_sec", r.EndToEndMBs},
			{"raw_ws_stream_mb_per_sec", r.RawStreamMBs}, {"raw_ws_round_trip_mb_per_sec", r.RawRoundTripMBs},
			{"synced_write_mb_per_sec", r.SyncedWriteMBs},
			{"upload_ratio", r.UploadRatio}, {"download_ratio", r.DownloadRatio},
			{"rss_growth_mib", r.RSSGrowthMiB}, {"rss_measured", r.RSSMeasured}, {"cpu_seconds", r.CPUSeconds}})
		return nil
	}
	w := env.stdout
	fmt.Fprintf(w, "file                     %s in chunks of %d, relay on SQLite, rate limits %s\n", humanize.IBytes(uint64(r.Bytes)), r.ChunkSize, r.Limits)
	fmt.Fprintf(w, "upload                   %.1f MB/s (%.2f of raw)\n", r.UploadMBs, r.UploadRatio)
	fmt.Fprintf(w, "download, verify, save   %.1f MB/s (%.2f of raw)\n", r.DownloadMBs, r.DownloadRatio)
	fmt.Fprintf(w, "end to end               %.1f MB/s (send to saved and committed)\n", r.EndToEndMBs)
	fmt.Fprintf(w, "raw websocket loopback   %.1f MB/s streamed, %.1f MB/s one message at a time\n", r.RawStreamMBs, r.RawRoundTripMBs)
	fmt.Fprintf(w, "chunk writes, each synced %.1f MB/s (same disk: the bound durability sets)\n", r.SyncedWriteMBs)
	if r.RSSMeasured {
		fmt.Fprintf(w, "resident memory growth   %.1f MiB (clients and relay, one process)\n", r.RSSGrowthMiB)
	}
	fmt.Fprintf(w, "CPU                      %.1f s\n", r.CPUSeconds)
	return nil
}

func benchHistory(ctx context.Context, env *cliEnv, asJSON bool, messages int) error {
	o := bench.HistoryOptions{Messages: messages, Progress: env.stderr}
	if asJSON {
		o.Progress = io.Discard
	}
	r, err := bench.RunHistory(ctx, o)
	if err != nil {
		return err
	}
	l, err := bench.RunLinkHistory(ctx, o)
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if asJSON {
		printer{env.stdout, true}.record([]kv{{"messages", r.Messages}, {"archive_bytes", r.ArchiveBytes}, {"backup_seconds", r.ArchiveSecs},
			{"kdf_seconds", r.BackupKDFSecs}, {"check_seconds", r.CheckSecs}, {"import_seconds", r.ImportSecs},
			{"import_msgs_per_sec", r.ImportPerSec}, {"rss_growth_mib", r.RSSGrowthMiB}, {"rss_measured", r.RSSMeasured},
			{"link_archive_bytes", l.ArchiveBytes}, {"link_archive_seconds", l.ArchiveSecs}, {"link_upload_seconds", l.UploadSecs},
			{"link_download_seconds", l.DownloadSecs}, {"link_import_seconds", l.ImportSecs}, {"link_import_msgs_per_sec", l.ImportPerSec},
			{"link_rss_growth_mib", l.RSSGrowthMiB}, {"link_profile_rss_growth_mib", l.ProfileRSSMiB}})
		return nil
	}
	w := env.stdout
	fmt.Fprintf(w, "history                  %d messages with one peer, bodies of 100 bytes\n", r.Messages)
	fmt.Fprintf(w, "backup                   %.2f s, %s (Argon2id at the default cost: %.2f s of it)\n", r.ArchiveSecs, humanize.IBytes(uint64(r.ArchiveBytes)), r.BackupKDFSecs)
	fmt.Fprintf(w, "restore: check           %.2f s (the whole archive read and opened before anything is written)\n", r.CheckSecs)
	fmt.Fprintf(w, "restore: import          %.2f s, %.0f messages/s (batches of %d, each one transaction)\n", r.ImportSecs, r.ImportPerSec, engine.ImportBatchRecords)
	if r.RSSMeasured {
		fmt.Fprintf(w, "resident memory growth   %.1f MiB during the restore\n", r.RSSGrowthMiB)
	}
	fmt.Fprintf(w, "link: archive            %.2f s, %s (device add: one snapshot read, sealed with a random key, synced)\n", l.ArchiveSecs, humanize.IBytes(uint64(l.ArchiveBytes)))
	fmt.Fprintf(w, "link: upload             %.2f s (the archive as a blob, relay on SQLite on loopback)\n", l.UploadSecs)
	fmt.Fprintf(w, "link: download           %.2f s (the new device: fetched, verified, opened)\n", l.DownloadSecs)
	fmt.Fprintf(w, "link: import             %.2f s, %.0f messages/s (batches of %d, each one transaction)\n", l.ImportSecs, l.ImportPerSec, engine.ImportBatchRecords)
	if l.RSSMeasured {
		fmt.Fprintf(w, "resident memory growth   %.1f MiB during the new device's download and import (%.1f MiB before, creating and opening its profile)\n", l.RSSGrowthMiB, l.ProfileRSSMiB)
	}
	return nil
}
