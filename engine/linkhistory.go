package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/wire"
)

// History at link time (issue 34). The device holding the account key
// decides what history a new device gets (HistoryChoice: all, none, or
// the last N days); the choice narrows the messages only, and what a
// device needs to work (the person's groups above all) travels whatever
// it is (historyRecord). When the relay has taken the list naming the new
// device, that device stores the list and the link's cut (LinkCut) in one
// transaction: from then on every message it sends, and every decision it
// makes, has a lane to the new device (person.go, decision.go); what came
// before travels in a keyed archive (archive.go) written from one snapshot
// taken after the cut, uploaded as a blob through the files machinery
// (chunked, encrypted, resumable, verified), and named with its key in the
// sealed link package (wire.LinkHistory). What both the archive and a
// lane carry is stored once: every import keeps what is there.
//
// The new device records the import's start, with the archive's source,
// in the transaction that creates its profile, then downloads the blob
// (resumable: the partial download keeps every chunk that authenticates)
// and imports the archive in bounded transactions (ImportArchive). A link
// killed at any point after its profile was written goes on with `parley
// link` again (ImportLinkHistory), at the first record not stored.
//
// In flight at the cut (docs/reliability.md):
//   - a message the linking device sent and still delivers is imported as
//     a sent copy (SentCopied): its lanes, retries and ticks stay on the
//     device that sent it;
//   - a message received and not yet decided there travels as a staged
//     record and is pending on the new device too: either device may
//     commit or discard it, and the decision reaches the other over their
//     self-lanes (decision.go), whichever arrives first.

// HistoryMode is what history a linked device gets.
type HistoryMode uint8

// History modes, as link_cut keeps them.
const (
	HistoryNone  HistoryMode = 0
	HistoryAll   HistoryMode = 1
	HistorySince HistoryMode = 2
)

// MaxHistoryDays bounds --history Nd: ten years.
const MaxHistoryDays = 3650

// HistoryChoice is the history a person chose for a new device.
type HistoryChoice struct {
	Mode HistoryMode
	Days int // for HistorySince
}

// ParseHistoryChoice reads "all", "none" or "Nd" (1..MaxHistoryDays).
func ParseHistoryChoice(s string) (HistoryChoice, error) {
	switch s {
	case "all", "":
		return HistoryChoice{Mode: HistoryAll}, nil
	case "none":
		return HistoryChoice{Mode: HistoryNone}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 1 && n <= MaxHistoryDays {
			return HistoryChoice{Mode: HistorySince, Days: n}, nil
		}
	}
	return HistoryChoice{}, fmt.Errorf("history %q: want all, none or a number of days such as 30d (1..%d)", s, MaxHistoryDays)
}

// String returns the choice as ParseHistoryChoice reads it.
func (h HistoryChoice) String() string {
	switch h.Mode {
	case HistoryNone:
		return "none"
	case HistorySince:
		return fmt.Sprintf("%dd", h.Days)
	}
	return "all"
}

// LinkCut records, on the device holding the account key, where the
// history of a device it links was cut: in the transaction that stores the
// list naming the device (after an UpdateDeviceList in the same batch).
type LinkCut struct {
	Device  uint32
	At      time.Time
	History HistoryMode
	Since   time.Time // HistorySince: the oldest message that travels
}

func (LinkCut) plan() {}

// Kind implements Plan.
func (LinkCut) Kind() string { return "link-cut" }

// LinkDevice is AddDevice that also records the link's cut with the list,
// in one transaction.
func (c *Client) LinkDevice(ctx context.Context, e wire.DeviceEntry, h HistoryChoice) (wire.DeviceList, error) {
	now := c.cfg.Now()
	cut := LinkCut{Device: e.Number, At: now, History: h.Mode}
	if h.Mode == HistorySince {
		cut.Since = now.Add(-time.Duration(h.Days) * 24 * time.Hour)
	}
	return c.addDevice(ctx, e, []Plan{cut})
}

// LinkHistoryProgress reports a link's history as it goes: its stage
// ("archive", "upload", "download", "import") and how far (records or
// bytes).
type LinkHistoryProgress func(stage string, done, total int64)

// linkArchiveName is the keyed archive's file in the files directory.
func linkArchiveName(device uint32) string { return fmt.Sprintf("link-history-%d.archive", device) }

// historyRecord reports whether r is history (a message of a
// conversation or of a group) rather than state a device needs to work
// (the groups, pins, accepted and blocked senders, contacts, and the
// messages pending at the cut): a HistoryChoice leaves out history only.
// since is the oldest message kept, in Unix ns; HistoryNone keeps none.
func historyRecord(r wire.ArchiveRecord, mode HistoryMode, since int64) (kept bool) {
	var at int64
	switch m := r.(type) {
	case wire.ArchiveMessage:
		at = m.At
	case wire.ArchiveGroupMessage:
		at = m.At
	default:
		return true
	}
	switch mode {
	case HistoryNone:
		return false
	case HistorySince:
		return at >= since
	}
	return true
}

// LinkHistory writes the history the cut of device chose as a keyed
// archive, uploads it as a blob, and returns what the link package says
// of it: nil when there is nothing to carry. Whatever the choice, the
// archive carries what the new device needs to work that is not history
// (historyRecord): every group this person is in (its roster log, start
// and name, so that the device takes part in the group), the pinned
// identities, the accepted and blocked senders, the contacts, and the
// messages received and undecided at the cut; the choice leaves out the
// messages of conversations and groups (all of them for HistoryNone).
// The archive is read from one snapshot taken now, after the cut.
//
// With HistoryNone, an archive that cannot go (no blob store, too large,
// an upload that fails) returns ErrArchiveLeftOut, naming why, and no
// history: the package goes without it, as before the archive carried the
// groups, since the device is in the list already and a link that failed
// now would leave it there with no package.
func (c *Client) LinkHistory(ctx context.Context, device uint32, progress LinkHistoryProgress) (hist *wire.LinkHistory, sum BackupSummary, err error) {
	cut, ok, err := c.store.LinkCut(ctx, device)
	switch {
	case err != nil:
		return nil, BackupSummary{}, err
	case !ok:
		return nil, BackupSummary{}, fmt.Errorf("link history: no cut recorded for device %d", device)
	}
	if cut.History == HistoryNone {
		defer func() {
			if err != nil && ctx.Err() == nil {
				hist, err = nil, fmt.Errorf("%w: %w", ErrArchiveLeftOut, err)
			}
		}()
	}
	blobs, fc, err := c.fileSetup()
	if err != nil {
		return nil, BackupSummary{}, fmt.Errorf("link history: %w", err)
	}
	var key [32]byte
	if _, err := io.ReadFull(c.cfg.Random, key[:]); err != nil {
		return nil, BackupSummary{}, err
	}
	path := filepath.Join(fc.Dir, linkArchiveName(device))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, BackupSummary{}, err
	}
	defer func() {
		f.Close()
		os.Remove(path)
	}()
	aw, err := NewKeyedArchiveWriter(f, key, c.cfg.Random)
	if err != nil {
		return nil, BackupSummary{}, err
	}
	since := cut.Since.UnixNano()
	var n int64
	err = c.store.LinkArchiveRecords(ctx, func(r wire.ArchiveRecord) error {
		if !historyRecord(r, cut.History, since) {
			return nil
		}
		if err := aw.Write(r); err != nil {
			return err
		}
		if n++; progress != nil && n%256 == 0 {
			progress("archive", n, 0)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, BackupSummary{}, fmt.Errorf("link history: %w", err)
	}
	end, err := aw.Close()
	if err != nil {
		return nil, BackupSummary{}, err
	}
	sum = BackupSummary{Records: end.Records, Messages: end.Messages, Groups: end.Groups, Bytes: aw.Written()}
	if end.Records == 0 {
		return nil, sum, nil
	}
	if err := f.Sync(); err != nil {
		return nil, sum, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, sum, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, sum, err
	}
	if fi.Size() > fc.MaxSize {
		advice := "link with --history 30d or none"
		switch cut.History {
		case HistorySince:
			advice = "link with fewer days, or --history none"
		case HistoryNone:
			advice = "the groups and the rest alone are over the bound"
		}
		return nil, sum, fmt.Errorf("link history of %d bytes (at most %d; %s): %w", fi.Size(), fc.MaxSize, advice, ErrFileTooLarge)
	}
	release, err := c.acquireTransfer(ctx)
	if err != nil {
		return nil, sum, err
	}
	defer release()
	rec, err := c.newUpload(ctx, blobs, fc, fmt.Sprintf("link/%d", device), path, fi)
	if err != nil {
		return nil, sum, fmt.Errorf("link history: %w", err)
	}
	var up Progress
	if progress != nil {
		progress("upload", 0, fi.Size()) // the archive is written
		up = func(done, total int64) { progress("upload", done, total) }
	}
	m, _, err := c.upload(ctx, blobs, f, rec, up)
	if eerr := c.endUpload(ctx, rec); err == nil {
		err = eerr
	}
	if err != nil {
		return nil, sum, fmt.Errorf("link history: upload: %w", err)
	}
	return &wire.LinkHistory{Archive: aw.ID(), Key: key, Records: end.Records, Manifest: m}, sum, nil
}

// linkKeepSize is the size of the keep choice at the end of a link's
// source: its mode (one byte) and days (two bytes, MaxHistoryDays fits).
const linkKeepSize = 3

// ErrArchiveLeftOut means a link with HistoryNone goes without its
// archive (LinkHistory): the new device is listed and gets its package,
// but not the pins, accepted senders and undecided messages the archive
// would have carried; its groups (with their members' pins) go to it as
// group state lanes stored with the list (groupstate.go). The error wraps
// why.
var ErrArchiveLeftOut = errors.New("the link's archive (pins, accepted senders, undecided messages; the groups go apart) did not go")

// encodeLinkSource is what a linked device keeps of its history's source
// (ImportStart.Source): the archive's key, its record count, the blob's
// manifest, then the history this device keeps (keep). A source written
// before the keep choice was recorded ends with the manifest: the
// manifest's strict decoding tells the two apart (its last field is
// length-prefixed, so three more bytes never decode as one).
func encodeLinkSource(h wire.LinkHistory, keep HistoryChoice) ([]byte, error) {
	m, err := wire.EncodeManifest(h.Manifest)
	if err != nil {
		return nil, err
	}
	b := append([]byte(nil), h.Key[:]...)
	b = binary.BigEndian.AppendUint64(b, h.Records)
	b = append(b, m...)
	b = append(b, byte(keep.Mode))
	return binary.BigEndian.AppendUint16(b, uint16(keep.Days)), nil
}

// decodeLinkSource reads a link's source; recorded is false for a source
// written before it carried the keep choice.
func decodeLinkSource(b []byte) (h wire.LinkHistory, keep HistoryChoice, recorded bool, err error) {
	if len(b) < 40 {
		return h, keep, false, fmt.Errorf("link history source of %d bytes: %w", len(b), ErrMalformedState)
	}
	copy(h.Key[:], b)
	h.Records = binary.BigEndian.Uint64(b[32:40])
	m, err := wire.DecodeManifest(b[40:])
	if err != nil && len(b) >= 40+linkKeepSize {
		tail := b[len(b)-linkKeepSize:]
		keep = HistoryChoice{Mode: HistoryMode(tail[0]), Days: int(binary.BigEndian.Uint16(tail[1:]))}
		if m, err = wire.DecodeManifest(b[40 : len(b)-linkKeepSize]); err == nil {
			recorded = true
			if err = checkHistoryChoice(keep); err != nil {
				return h, keep, false, fmt.Errorf("link history source: %w: %w", ErrMalformedState, err)
			}
		}
	}
	if err != nil {
		return h, keep, false, fmt.Errorf("link history source: %w: %w", ErrMalformedState, err)
	}
	h.Manifest = m
	return h, keep, recorded, nil
}

// checkHistoryChoice refuses a choice ParseHistoryChoice would not give.
func checkHistoryChoice(h HistoryChoice) error {
	switch {
	case h.Mode == HistorySince && h.Days >= 1 && h.Days <= MaxHistoryDays:
	case (h.Mode == HistoryNone || h.Mode == HistoryAll) && h.Days == 0:
	default:
		return fmt.Errorf("history mode %d, %d days", h.Mode, h.Days)
	}
	return nil
}

// Narrower returns whichever of h and o keeps less: none before any
// number of days, fewer days before more, any before all.
func (h HistoryChoice) Narrower(o HistoryChoice) HistoryChoice {
	rank := func(c HistoryChoice) int {
		switch c.Mode {
		case HistoryNone:
			return 0
		case HistorySince:
			return c.Days
		}
		return MaxHistoryDays + 1
	}
	if rank(o) < rank(h) {
		return o
	}
	return h
}

// linkImportStart is the ImportStart a linked device's profile records
// for its history, with the history it keeps (keep).
func linkImportStart(h wire.LinkHistory, keep HistoryChoice, now time.Time) (ImportStart, error) {
	src, err := encodeLinkSource(h, keep)
	if err != nil {
		return ImportStart{}, err
	}
	return ImportStart{Archive: h.Archive, Next: 0, Total: h.Records, At: now, Source: src}, nil
}

// Names of a linked device's history download in the files directory.
const (
	linkHistoryPart  = "link-history.part"
	linkHistoryPlain = "link-history.archive"
)

// ErrNoLinkImport means the profile has no history import under way.
var ErrNoLinkImport = errors.New("no history import under way")

// ImportLinkHistory downloads this linked device's history (resuming a
// partial download) and imports it from where the import stands, in
// batches of at most batch records (ImportBatchRecords when 0), keeping
// the narrower of keep and the choice recorded when the profile was
// created (CreateLinkedProfile): a resumed `parley link` without
// --history keeps no more than the interrupted one chose;
// ErrNoLinkImport when there is none under way. Once the import is done
// the downloaded files go.
func (c *Client) ImportLinkHistory(ctx context.Context, batch int, keep HistoryChoice, progress LinkHistoryProgress) (LinkImportSummary, error) {
	st, err := c.importLinkHistory(ctx, batch, keep, progress)
	return st, err
}

// LinkImportSummary counts what a linked device's history import stored.
type LinkImportSummary struct {
	Messages uint64 // history entries stored (those there already are not counted)
	Groups   uint32 // groups the archive holds
	Bytes    int64  // the archive's size
}

func (c *Client) importLinkHistory(ctx context.Context, batch int, keep HistoryChoice, progress LinkHistoryProgress) (LinkImportSummary, error) {
	var sum LinkImportSummary
	archive, src, ok, err := c.store.PendingLinkImport(ctx)
	if err != nil {
		return sum, err
	}
	if !ok {
		return sum, ErrNoLinkImport
	}
	h, started, recorded, err := decodeLinkSource(src)
	if err != nil {
		return sum, err
	}
	if recorded {
		keep = keep.Narrower(started)
	}
	blobs, fc, err := c.fileSetup()
	if err != nil {
		return sum, fmt.Errorf("link history: %w", err)
	}
	part, plain := filepath.Join(fc.Dir, linkHistoryPart), filepath.Join(fc.Dir, linkHistoryPlain)
	f, err := os.OpenFile(plain, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	var down Progress
	if progress != nil {
		progress("download", 0, h.Manifest.Size)
		down = func(done, total int64) { progress("download", done, total) }
	}
	release, err := c.acquireTransfer(ctx)
	if err != nil {
		return sum, err
	}
	err = c.download(ctx, blobs, h.Manifest, part, &plainOut{f: f, h: sha256.New()}, down)
	release()
	if err != nil {
		return sum, fmt.Errorf("link history: download: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return sum, err
	}
	ar, err := OpenKeyedArchive(f, h.Key)
	if err != nil {
		return sum, fmt.Errorf("link history: %w", err)
	}
	if ar.Header().ID != archive {
		return sum, fmt.Errorf("link history: %w: another archive than the package named", ErrArchiveDamaged)
	}
	var imp func(ImportState)
	if progress != nil {
		progress("import", 0, int64(h.Records)) // the download is whole and opens
		imp = func(s ImportState) { progress("import", int64(s.Next), int64(s.Total)) }
	}
	var filter func(wire.ArchiveRecord) bool
	if keep.Mode != HistoryAll {
		// What this device keeps narrows the history only: the groups
		// and the rest of what a device needs come whatever it keeps.
		since := c.cfg.Now().Add(-time.Duration(keep.Days) * 24 * time.Hour).UnixNano()
		filter = func(r wire.ArchiveRecord) bool { return historyRecord(r, keep.Mode, since) }
	}
	sum.Bytes = h.Manifest.Size
	st, err := importArchive(ctx, c.store, ar, batch, imp, filter)
	// A decision a sibling told this device before the message came may
	// name a staged record just imported: the next round applies it.
	c.decisionsDue.Store(true)
	sum.Messages = st.Messages
	if err != nil {
		return sum, fmt.Errorf("link history: %w", err)
	}
	if end, ok := ar.End(); ok {
		sum.Groups = end.Groups
	}
	f.Close()
	os.Remove(plain)
	os.Remove(part)
	return sum, nil
}
