package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/wire"
)

// LinkResult is what RunLinkHistory measured: the history of a link with
// --history all, from the device holding the account key to a new one.
type LinkResult struct {
	Messages     int
	ArchiveBytes int64
	ArchiveSecs  float64 // the linking device: the archive read from one snapshot, sealed, written and synced
	UploadSecs   float64 // the linking device: the archive's blob uploaded
	DownloadSecs float64 // the new device: the blob downloaded, verified and opened
	ImportSecs   float64 // the new device: the batches stored
	ImportPerSec float64
	RSSGrowthMiB float64 // during the new device's download and import, over the process's base
	RSSMeasured  bool
	// ProfileRSSMiB is the growth while the new device's profile is
	// created and opened (Argon2id of its passphrase, twice, as parley
	// link does), measured apart, before the download.
	ProfileRSSMiB float64
}

// RunLinkHistory fills a profile with a history of o.Messages one-to-one
// messages (as RunHistory does) and links a new device to its account
// with --history all against a relay on loopback that keeps device lists:
// the ceremony's steps in memory (no provisioning mailbox: the digits are
// not what is measured), then the linking device's archive and upload and
// the new device's download and import, each timed, through the calls
// parley device add and parley link make.
func RunLinkHistory(ctx context.Context, o HistoryOptions) (LinkResult, error) {
	if o.Messages < 1 {
		return LinkResult{}, fmt.Errorf("--history %d: want at least one message", o.Messages)
	}
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	dir, err := os.MkdirTemp("", "parley-bench-link-")
	if err != nil {
		return LinkResult{}, err
	}
	defer os.RemoveAll(dir)
	url, stop, err := fileRelay(ctx, filepath.Join(dir, "relay"), FileOptions{Size: 1, ChunkSize: wire.MinFileChunkSize, deviceLists: true})
	if err != nil {
		return LinkResult{}, err
	}
	defer stop()
	res := LinkResult{Messages: o.Messages}
	pass := []byte("bench")
	opts := profile.Options{Passphrase: pass}

	say("filling a profile with %d messages", o.Messages)
	src := filepath.Join(dir, "alice_1")
	if err := fillHistory(ctx, src, url, pass, o.Messages); err != nil {
		return res, err
	}
	holder, err := profile.Open(ctx, src, opts)
	if err != nil {
		return res, err
	}
	defer holder.Close()

	// The ceremony, as device add and link run it, without the mailbox.
	n, err := engine.NewLinkNew(engine.SystemRandom{})
	if err != nil {
		return res, err
	}
	offer, err := holder.Client.LinkOffer(ctx)
	if err != nil {
		return res, err
	}
	code := n.Code(url, wire.MailboxID{1})
	h, err := engine.NewLinkHost(engine.SystemRandom{}, code, n.Hello(), offer)
	if err != nil {
		return res, err
	}
	_, got, err := n.TakeOffer(h.Offer())
	if err != nil {
		return res, err
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		return res, err
	}
	entry, err := h.TakeJoin(n.Join(id), time.Now().Unix())
	if err != nil {
		return res, err
	}
	list, err := holder.Client.LinkDevice(ctx, entry, engine.HistoryChoice{Mode: engine.HistoryAll})
	if err != nil {
		return res, err
	}
	pkg, err := holder.Client.LinkPackage(ctx, list, true)
	if err != nil {
		return res, err
	}

	say("archiving and uploading")
	start := time.Now()
	var uploadStart time.Time
	hist, sum, err := holder.Client.LinkHistory(ctx, entry.Number, func(stage string, done, total int64) {
		if stage == "upload" && uploadStart.IsZero() { // called once the archive is written
			uploadStart = time.Now()
		}
	})
	if err != nil {
		return res, err
	}
	end := time.Now()
	if uploadStart.IsZero() {
		uploadStart = end
	}
	res.ArchiveSecs, res.UploadSecs, res.ArchiveBytes = uploadStart.Sub(start).Seconds(), end.Sub(uploadStart).Seconds(), sum.Bytes
	if hist == nil {
		return res, fmt.Errorf("the link carried no history")
	}
	pkg.History = hist
	sealed, err := h.Package(pkg)
	if err != nil {
		return res, err
	}
	pkgNew, err := n.TakePackage(sealed)
	if err != nil {
		return res, err
	}

	say("downloading and importing on the new device")
	rss := startRSSWatch()
	dst := filepath.Join(dir, "alice_2")
	if _, err := profile.CreateLinked(ctx, dst, url, id, got.Number, pkgNew, engine.HistoryChoice{Mode: engine.HistoryAll}, opts); err != nil {
		rss.stop()
		return res, err
	}
	p, err := profile.Open(ctx, dst, opts)
	if err != nil {
		rss.stop()
		return res, err
	}
	defer p.Close()
	res.ProfileRSSMiB, _ = rss.stop()
	rss = startRSSWatch()
	start = time.Now()
	var importStart time.Time
	st, err := p.Client.ImportLinkHistory(ctx, 0, engine.HistoryChoice{Mode: engine.HistoryAll}, func(stage string, done, total int64) {
		if stage == "import" && importStart.IsZero() { // called once the download opened
			importStart = time.Now()
		}
	})
	end = time.Now()
	res.RSSGrowthMiB, res.RSSMeasured = rss.stop()
	if err != nil {
		return res, err
	}
	if importStart.IsZero() {
		importStart = start
	}
	res.DownloadSecs, res.ImportSecs = importStart.Sub(start).Seconds(), end.Sub(importStart).Seconds()
	if st.Messages != uint64(o.Messages) {
		return res, fmt.Errorf("the new device stored %d messages, want %d", st.Messages, o.Messages)
	}
	res.ImportPerSec = float64(o.Messages) / res.ImportSecs
	return res, nil
}
