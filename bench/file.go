package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// FileOptions say what a file run does (parley bench --file).
type FileOptions struct {
	// Size is the file's size in bytes (default 100 MiB).
	Size int64
	// ChunkSize is the upload's plaintext chunk (engine.DefaultFileChunkSize).
	ChunkSize uint32
	// DefaultLimits runs the relay with its default limits (the byte
	// bucket of 32 MiB/s per connection among them) instead of with its
	// rate limits off; the blob quotas are raised to fit the file either
	// way.
	DefaultLimits bool
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
	// CPUProfile, when set, receives a CPU profile of the transfer.
	CPUProfile io.Writer

	deviceLists bool // the relay keeps device lists (RunLinkHistory)
}

// FileResult is what a file run measured. MB is 10^6 bytes of the file.
type FileResult struct {
	Bytes     int64   `json:"bytes"`
	ChunkSize uint32  `json:"chunk_size"`
	Limits    string  `json:"limits"` // "off" or "default"
	UploadMBs float64 `json:"upload_mb_per_sec"`
	// DownloadMBs includes the verification, the decryption into the
	// destination and the commit.
	DownloadMBs float64 `json:"download_mb_per_sec"`
	// EndToEndMBs is the size over the time from the send's start to the
	// saved, committed file (upload, delivery of the manifest, download).
	EndToEndMBs float64 `json:"end_to_end_mb_per_sec"`
	// RawStreamMBs is one websocket connection on loopback streaming
	// messages of the size of an upload's chunk request, no replies; and
	// RawRoundTripMBs the same messages, each answered before the next.
	RawStreamMBs    float64 `json:"raw_ws_stream_mb_per_sec"`
	RawRoundTripMBs float64 `json:"raw_ws_round_trip_mb_per_sec"`
	// SyncedWriteMBs is the same disk's rate of chunk-sized writes each
	// followed by an fsync, as the relay's store does for every chunk put
	// and the receiver for every chunk fetched: the bound that durability
	// sets on a transfer that never batches chunks.
	SyncedWriteMBs float64 `json:"synced_write_mb_per_sec"`
	// UploadRatio and DownloadRatio are each leg against RawStreamMBs.
	UploadRatio   float64 `json:"upload_ratio"`
	DownloadRatio float64 `json:"download_ratio"`
	// RSSGrowthMiB is the most the process's resident memory rose above
	// its level before the send, over the send and the fetch (the relay
	// runs in the same process: its memory is counted too). Zero with
	// RSSMeasured false where /proc is not available.
	RSSGrowthMiB float64 `json:"rss_growth_mib"`
	RSSMeasured  bool    `json:"rss_measured"`
	CPUSeconds   float64 `json:"cpu_seconds"`
}

// RunFile sends one file of o.Size random bytes from a fresh profile to
// another through a relay on loopback whose blobs are in SQLite (as with
// parley relay --data), fetches it, and measures the rates, the raw
// websocket rate on the same loopback and the memory growth.
func RunFile(ctx context.Context, o FileOptions) (FileResult, error) {
	if o.Size <= 0 {
		o.Size = 100 << 20
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = engine.DefaultFileChunkSize
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	res := FileResult{Bytes: o.Size, ChunkSize: o.ChunkSize, Limits: "off"}
	if o.DefaultLimits {
		res.Limits = "default"
	}
	dir, err := os.MkdirTemp("", "parley-file-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)

	msg := int(o.ChunkSize) + wire.FileTagSize + 64 // a chunk request's size, roughly
	if res.RawStreamMBs, res.RawRoundTripMBs, err = rawWebsocket(ctx, msg, min(o.Size, 256<<20)); err != nil {
		return res, fmt.Errorf("raw websocket: %w", err)
	}
	fmt.Fprintf(o.Progress, "raw websocket, %d-byte messages: %.0f MB/s streamed, %.0f MB/s one at a time\n", msg, res.RawStreamMBs, res.RawRoundTripMBs)

	if res.SyncedWriteMBs, err = syncedWrites(dir, msg, min(o.Size, 64<<20)); err != nil {
		return res, fmt.Errorf("synced writes: %w", err)
	}
	fmt.Fprintf(o.Progress, "%d-byte writes, each synced: %.0f MB/s\n", msg, res.SyncedWriteMBs)

	src := filepath.Join(dir, "file.bin")
	if err := writeRandomFile(src, o.Size); err != nil {
		return res, err
	}
	url, stop, err := fileRelay(ctx, filepath.Join(dir, "relay"), o)
	if err != nil {
		return res, err
	}
	defer stop()
	files := engine.FileConfig{ChunkSize: o.ChunkSize, MaxSize: max(o.Size, engine.DefaultMaxFileSize)}
	alice, err := openFilePeer(ctx, dir, "alice/1", url, files)
	if err != nil {
		return res, err
	}
	defer alice.Close()
	bob, err := openFilePeer(ctx, dir, "bob/1", url, files)
	if err != nil {
		return res, err
	}
	defer bob.Close()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		return res, err
	}

	mem := startRSSWatch()
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return res, err
		}
	}
	cpu0, _ := cpuTime()
	start := time.Now()
	var shown time.Time
	progress := func(done, total int64) {
		if now := time.Now(); now.Sub(shown) >= 200*time.Millisecond || done == total {
			shown = now
			fmt.Fprintf(o.Progress, "\r%.1f s: %d of %d MiB", now.Sub(start).Seconds(), done>>20, total>>20)
		}
	}
	id, err := alice.Client.SendFile(ctx, bob.Client.Self(), src, progress)
	if err != nil {
		return res, fmt.Errorf("send file: %w", err)
	}
	uploaded := time.Now()
	if err := awaitFile(ctx, bob, alice.Client.Self(), id); err != nil {
		return res, err
	}
	fetchStart := time.Now()
	if _, err := bob.Client.FetchFile(ctx, alice.Client.Self(), id, out, progress); err != nil {
		return res, fmt.Errorf("fetch file: %w", err)
	}
	end := time.Now()
	cpu1, _ := cpuTime()
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	res.RSSGrowthMiB, res.RSSMeasured = mem.stop()
	fmt.Fprintln(o.Progress)

	mb := float64(o.Size) / 1e6
	res.UploadMBs = mb / uploaded.Sub(start).Seconds()
	res.DownloadMBs = mb / end.Sub(fetchStart).Seconds()
	res.EndToEndMBs = mb / end.Sub(start).Seconds()
	res.UploadRatio = res.UploadMBs / res.RawStreamMBs
	res.DownloadRatio = res.DownloadMBs / res.RawStreamMBs
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	return res, nil
}

// fileRelay starts a relay on loopback with its stores in SQLite under dir
// and blob quotas that fit a file of o.Size bytes; with o.DefaultLimits
// off, its rate limits are off, as parley bench runs its relay.
func fileRelay(ctx context.Context, dir string, o FileOptions) (url string, stop func(), err error) {
	var limits relayserver.Limits
	if !o.DefaultLimits {
		limits = relayserver.Limits{MessageRate: -1, ByteRate: -1, RegistrationRate: -1}
	}
	need := o.Size + int64(wire.FileChunks(o.Size, o.ChunkSize))*wire.FileTagSize
	limits.Blobs = relaystore.BlobLimits{MaxSize: max(need, relaystore.DefaultBlobMaxSize),
		AddressBytes: max(need, relaystore.DefaultBlobAddressBytes), IPBytes: max(need, relaystore.DefaultBlobIPBytes),
		TotalBytes: max(need, relaystore.DefaultBlobTotalBytes),
		// No reserve: the bench's one sender would otherwise be refused
		// once the file takes the store past three quarters of its total
		// (1 GiB stopped at 768 MiB).
		ReserveBytes: -1}
	st, err := relaystore.OpenSQLite(ctx, dir, limits.StoreLimits())
	if err != nil {
		return "", nil, err
	}
	blobs, err := relaystore.OpenSQLiteBlobs(ctx, dir, limits.Blobs)
	if err != nil {
		st.Close()
		return "", nil, err
	}
	srv, err := relayserver.New(st, relayserver.Config{Limits: limits, Blobs: blobs, DeviceLists: o.deviceLists})
	if err != nil {
		blobs.Close()
		st.Close()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		blobs.Close()
		st.Close()
		return "", nil, err
	}
	go srv.Serve(ln)
	return "ws://" + ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		blobs.Close()
		st.Close()
	}, nil
}

// openFilePeer makes a fresh profile with production settings and the
// file configuration files, connected and with its prekeys published.
func openFilePeer(ctx context.Context, dir, addr, url string, files engine.FileConfig) (*profile.Profile, error) {
	self := engine.MustParseAddress(addr)
	p, err := profile.Create(ctx, filepath.Join(dir, self.User), self, url, profile.Options{
		Passphrase: []byte("bench"),
		Connect:    profile.ConnectNow,
		Engine:     engine.Config{EventBuffer: 4096, Files: files},
	})
	if err != nil {
		return nil, err
	}
	if err := p.Client.RefreshPreKeys(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// awaitFile syncs p until the file message id from sender is pending, for
// at most a minute (a loaded machine may take a while to relay it).
func awaitFile(ctx context.Context, p *profile.Profile, sender engine.Address, id wire.LogicalID) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := p.Client.Sync(ctx); err != nil {
			return fmt.Errorf("receive the manifest: %w", err)
		}
		if _, _, err := p.Client.PendingFile(ctx, sender, id); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the manifest of %x did not arrive within a minute", id[:])
}

// syncedWrites writes total bytes to a file in dir in blocks of size
// bytes, each followed by an fsync, and returns the rate in MB/s.
func syncedWrites(dir string, size int, total int64) (float64, error) {
	f, err := os.CreateTemp(dir, "synced-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, size)
	start := time.Now()
	var n int64
	for ; n < total; n += int64(size) {
		if _, err := f.Write(block); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
	}
	return float64(n) / 1e6 / time.Since(start).Seconds(), nil
}

// writeRandomFile writes size pseudo-random bytes to path in small
// pieces, so that making a large file costs no memory.
func writeRandomFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	rng := rand.NewChaCha8([32]byte{'f', 'i', 'l', 'e'})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := int(min(left, int64(len(buf))))
		rng.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= int64(n)
	}
	return f.Close()
}

// rssWatch samples the resident set size while a transfer runs.
type rssWatch struct {
	base int64
	peak int64
	ok   bool
	quit chan struct{}
	wg   sync.WaitGroup
}

// startRSSWatch returns freed memory to the system, takes the resident
// size as the base, resets the kernel's peak (VmHWM) and samples every
// 10 ms until stop.
func startRSSWatch() *rssWatch {
	debug.FreeOSMemory()
	w := &rssWatch{quit: make(chan struct{})}
	w.base, w.ok = residentBytes()
	w.peak = w.base
	resetPeakResident()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if r, ok := residentBytes(); ok && r > w.peak {
					w.peak = r
				}
			case <-w.quit:
				return
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the growth over the base in MiB: the
// larger of the sampled peak and the kernel's.
func (w *rssWatch) stop() (float64, bool) {
	close(w.quit)
	w.wg.Wait()
	if hwm, ok := peakResidentBytes(); ok && hwm > w.peak {
		w.peak = hwm
	}
	return float64(w.peak-w.base) / (1 << 20), w.ok
}
