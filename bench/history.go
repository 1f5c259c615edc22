package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// HistoryOptions configure RunHistory.
type HistoryOptions struct {
	// Messages is the history's size (parley bench --history N).
	Messages int
	// Progress receives a line per phase; nil: none.
	Progress io.Writer
}

// HistoryResult is what RunHistory measured: a backup of a profile
// holding Messages messages, and its restore as a new device.
type HistoryResult struct {
	Messages      int
	ArchiveBytes  int64
	ArchiveSecs   float64 // backup: read, seal, write, sync (the Argon2id step included)
	CheckSecs     float64 // restore's first pass: read and open every record
	ImportSecs    float64 // restore's second pass: the batches stored
	ImportPerSec  float64
	RSSGrowthMiB  float64 // during the restore (check and import), over the process's base
	RSSMeasured   bool
	BackupKDFSecs float64 // the Argon2id step alone, at the default cost
}

// RunHistory fills a profile with a history of o.Messages one-to-one
// messages (through the import's own plans, 500 a transaction), backs it up
// with the default archive KDF, and restores the archive as a new device
// against a relay on loopback, timing each phase.
func RunHistory(ctx context.Context, o HistoryOptions) (HistoryResult, error) {
	if o.Messages < 1 {
		return HistoryResult{}, fmt.Errorf("--history %d: want at least one message", o.Messages)
	}
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	dir, err := os.MkdirTemp("", "parley-bench-history-")
	if err != nil {
		return HistoryResult{}, err
	}
	defer os.RemoveAll(dir)
	url, stop, err := fileRelay(ctx, filepath.Join(dir, "relay"), FileOptions{Size: 1, ChunkSize: wire.MinFileChunkSize})
	if err != nil {
		return HistoryResult{}, err
	}
	defer stop()
	res := HistoryResult{Messages: o.Messages}
	pass := []byte("bench")

	say("filling a profile with %d messages", o.Messages)
	src := filepath.Join(dir, "alice_1")
	if err := fillHistory(ctx, src, url, pass, o.Messages); err != nil {
		return res, err
	}
	p, err := profile.Open(ctx, src, profile.Options{Passphrase: pass})
	if err != nil {
		return res, err
	}
	archive := filepath.Join(dir, "alice.parley")
	say("backing up")
	start := time.Now()
	f, err := os.Create(archive)
	if err != nil {
		p.Close()
		return res, err
	}
	sum, err := p.Client.Backup(ctx, f, pass, engine.DefaultArchiveKDF, nil)
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	p.Close()
	if err != nil {
		return res, err
	}
	res.ArchiveSecs, res.ArchiveBytes = time.Since(start).Seconds(), sum.Bytes
	kdfStart := time.Now()
	if _, err := engine.NewArchiveWriter(io.Discard, pass, engine.DefaultArchiveKDF, rand.Reader); err != nil {
		return res, err
	}
	res.BackupKDFSecs = time.Since(kdfStart).Seconds()

	say("restoring")
	rss := startRSSWatch()
	start = time.Now()
	in, err := os.Open(archive)
	if err != nil {
		return res, err
	}
	defer in.Close()
	chk, err := engine.CheckArchive(in, pass, engine.ArchiveKDF{})
	if err != nil {
		return res, err
	}
	res.CheckSecs = time.Since(start).Seconds()
	key, err := engine.UnmarshalAccountKey(chk.Account.Key[:])
	if err != nil {
		return res, err
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		return res, err
	}
	dev, err := engine.JoinAccount(ctx, dialPublisher{url: url, id: id}, key, chk.Account.List, id, time.Now())
	if err != nil {
		return res, err
	}
	dst := filepath.Join(dir, "alice_2")
	opts := profile.Options{Passphrase: pass}
	if err := profile.CreateRestored(ctx, dst, url, id, dev, key, chk, opts); err != nil {
		return res, err
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	ar, err := engine.OpenArchive(in, pass, engine.ArchiveKDF{})
	if err != nil {
		return res, err
	}
	start = time.Now()
	st, err := profile.Import(ctx, dst, ar, 0, nil, opts)
	if err != nil {
		return res, err
	}
	res.ImportSecs = time.Since(start).Seconds()
	res.RSSGrowthMiB, res.RSSMeasured = rss.stop()
	if st.Messages != uint64(o.Messages) {
		return res, fmt.Errorf("the restore stored %d messages, want %d", st.Messages, o.Messages)
	}
	res.ImportPerSec = float64(o.Messages) / res.ImportSecs
	return res, nil
}

// fillHistory makes the profile alice/1 in dir and stores n messages with
// bob/1 in it, both ways, 500 a transaction.
func fillHistory(ctx context.Context, dir, url string, pass []byte, n int) error {
	st, err := store.Create(ctx, dir, pass, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := engine.CreateProfile(ctx, st, engine.MustParseAddress("alice/1"), url, nil, time.Now()); err != nil {
		return err
	}
	var fill [16]byte
	rand.Read(fill[:])
	total := uint64(n) + 1
	if _, err := st.Apply(ctx, engine.ImportStart{Archive: fill, Next: 1, Total: total, At: time.Now()}); err != nil {
		return err
	}
	body := make([]byte, 100)
	for from := uint64(1); from < total; {
		to := min(from+engine.ImportBatchRecords, total)
		recs := make([]wire.ArchiveRecord, 0, to-from)
		for i := from; i < to; i++ {
			var id wire.LogicalID
			rand.Read(id[:])
			recs = append(recs, wire.ArchiveMessage{Peer: "bob/1", Direction: uint8(1 + i%2), ID: id, At: int64(i) * 1e9, State: uint8(2 * (i % 2)), Body: body})
		}
		if _, err := st.Apply(ctx, engine.ImportRecords{Archive: fill, From: from, To: to, Total: total, Records: recs}); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// dialPublisher publishes a list over a connection authenticated as the
// device the list adds (as parley restore does).
type dialPublisher struct {
	url string
	id  *engine.Identity
}

func (p dialPublisher) PublishDeviceList(ctx context.Context, l wire.DeviceList) error {
	key := p.id.Public().SigningKey
	var self engine.Address
	for _, e := range l.Entries {
		if e.SigningKey == key {
			self = engine.Address{User: l.User, Device: e.Number}
		}
	}
	c, err := transport.Dial(ctx, p.url, self, p.id, transport.ClientOptions{})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.PublishDeviceList(ctx, l)
}
