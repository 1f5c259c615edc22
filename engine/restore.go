package engine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Backup and restore (issue 34). A backup is an archive (archive.go) of
// the account key, the device list, and what the profile keeps of its
// people and its history: contacts, pins, blocked senders, accepted
// peers, groups with their roster logs, and every history entry with its
// reply, edit count and tombstone. Never sessions, prekeys, drafts,
// pending messages or lanes: those belong to the device that wrote it.
//
// A restore makes a new device of the same account. It reads the archive
// through before it writes anything (a wrong passphrase, a damaged,
// truncated or newer archive stop it there), signs the next generation of
// the device list with the account key it holds, has the relay take it
// (compare-and-set, publishDeviceList), creates the profile in one
// transaction that also records the import's start (ImportStart), and
// then stores the records in bounded batches (ImportRecords), each in one
// transaction that also moves the import's progress on. A restore killed
// at any point resumes at the first record not stored; every insert keeps
// what is there, so a record stored twice is stored once.

// ImportStart records, in the transaction that creates a restored profile,
// the archive it imports and where that import starts.
type ImportStart struct {
	Archive [16]byte
	Next    uint64 // the first record the batches store
	Total   uint64 // records before the end record
	At      time.Time
	// Source, for a linked device's history (linkhistory.go), names
	// where the archive waits and its key: sealed by the store, read back
	// by a link that resumes. Nil for a restore.
	Source []byte
}

// ImportRecords stores records From to To-1 of an archive (those of them
// the import keeps: Records, in order, at most To-From) and moves the
// import's progress from From to To; only when the progress is From (else
// ErrConflict). Every insert keeps a row that is there already. The last
// batch (To = Total) marks the import done.
type ImportRecords struct {
	Archive  [16]byte
	From, To uint64
	Total    uint64
	Records  []wire.ArchiveRecord
}

func (ImportStart) plan()   {}
func (ImportRecords) plan() {}

// Kind implements Plan.
func (ImportStart) Kind() string { return "import-start" }

// Kind implements Plan.
func (ImportRecords) Kind() string { return "import-records" }

// ImportState is where the import of an archive stands in a profile.
type ImportState struct {
	Next, Total uint64
	Done        bool
	// Messages counts the history entries the batches stored (entries
	// that were there already are not counted).
	Messages uint64
}

// ArchiveStore is the store's side of backups and restores.
type ArchiveStore interface {
	// ArchiveRecords calls emit with every record a backup holds after
	// the account's, in the archive's order, all read from one snapshot.
	ArchiveRecords(ctx context.Context, emit func(wire.ArchiveRecord) error) error
	// ImportState returns where the import of archive stands, and false
	// when this profile never started one.
	ImportState(ctx context.Context, archive [16]byte) (ImportState, bool, error)
	// LinkArchiveRecords is ArchiveRecords for a linked device's history:
	// the same records, then every message received and not decided
	// (wire.ArchiveStaged), all from one snapshot.
	LinkArchiveRecords(ctx context.Context, emit func(wire.ArchiveRecord) error) error
	// GroupStateRecords calls emit with the pins, then the groups, that
	// an archive holds (wire.ArchivePin, wire.ArchiveGroup), all from one
	// snapshot: what group state frames carry to a linked device.
	GroupStateRecords(ctx context.Context, emit func(wire.ArchiveRecord) error) error
	// LinkCut returns the cut recorded when device was linked.
	LinkCut(ctx context.Context, device uint32) (LinkCut, bool, error)
	// PendingLinkImport returns the import of a linked device's history
	// that has not finished, with its source (ImportStart.Source), and
	// false when there is none.
	PendingLinkImport(ctx context.Context) (archive [16]byte, source []byte, ok bool, err error)
	// UnfinishedImport reports whether an import stopped part way, and
	// whether it is a linked device's history (else a restore's).
	UnfinishedImport(ctx context.Context) (linked, ok bool, err error)
	// UnfinishedImportProgress is where the oldest import not done
	// stands, and false when every import into this profile is done.
	UnfinishedImportProgress(ctx context.Context) (ImportProgress, bool, error)
}

// ImportProgress is where an import that has not finished stands: the
// records stored of the archive's Total (Next, the index of the first one
// not stored), the history entries stored so far, whether it is a linked
// device's history (else a restore's) and when it started.
type ImportProgress struct {
	Next, Total uint64
	Messages    uint64
	Link        bool
	Started     time.Time
}

// UnfinishedImport reports whether an import into this profile stopped
// part way (a restore or a link killed during its history), and whether
// it is a linked device's history: the profile holds part of it.
func (c *Client) UnfinishedImport(ctx context.Context) (linked, ok bool, err error) {
	return c.store.UnfinishedImport(ctx)
}

// UnfinishedImportProgress is where the oldest import into this profile
// that has not finished stands (UnfinishedImport, with its counts), and
// false when there is none: the chat's status bar shows it.
func (c *Client) UnfinishedImportProgress(ctx context.Context) (ImportProgress, bool, error) {
	return c.store.UnfinishedImportProgress(ctx)
}

// ErrNotRestoring means a profile exists where a restore was asked, and it
// is not a restore of this archive that stopped part way.
var ErrNotRestoring = errors.New("the directory holds a profile that is not a restore of this archive")

// BackupSummary counts what a backup or a restore carried.
type BackupSummary struct {
	Records  uint64
	Messages uint64
	Groups   uint32
	Bytes    int64
}

// Backup writes the profile's archive to w under passphrase. Only the
// device holding the account key backs up (ErrNotAccountHolder): a backup
// is what makes a new device of the account. progress, when set, is
// called with the records written so far, now and then.
func (c *Client) Backup(ctx context.Context, w io.Writer, passphrase []byte, kdf ArchiveKDF, progress func(records uint64)) (BackupSummary, error) {
	a, err := LoadAccount(ctx, c.store)
	if err != nil {
		return BackupSummary{}, err
	}
	if a.Key == nil {
		return BackupSummary{}, ErrNotAccountHolder
	}
	aw, err := NewArchiveWriter(w, passphrase, kdf, c.cfg.Random)
	if err != nil {
		return BackupSummary{}, err
	}
	seed, _ := a.Key.MarshalBinary()
	if err := aw.Write(wire.ArchiveAccount{Key: [32]byte(seed), List: a.List, Device: c.self.Device}); err != nil {
		return BackupSummary{}, err
	}
	var n uint64
	err = c.store.ArchiveRecords(ctx, func(r wire.ArchiveRecord) error {
		if err := aw.Write(r); err != nil {
			return err
		}
		if n++; progress != nil && n%256 == 0 {
			progress(n)
		}
		return ctx.Err()
	})
	if err != nil {
		return BackupSummary{}, fmt.Errorf("back up: %w", err)
	}
	end, err := aw.Close()
	if err != nil {
		return BackupSummary{}, err
	}
	return BackupSummary{Records: end.Records, Messages: end.Messages, Groups: end.Groups, Bytes: aw.Written()}, nil
}

// ArchiveCheck is what reading an archive through found.
type ArchiveCheck struct {
	ID      [16]byte
	Account wire.ArchiveAccount
	End     wire.ArchiveEnd
}

// CheckArchive reads an archive through and returns its account and end
// record, or the first error (ErrArchive*): what a restore does before it
// writes anything.
func CheckArchive(r io.Reader, passphrase []byte, limit ArchiveKDF) (ArchiveCheck, error) {
	ar, err := OpenArchive(r, passphrase, limit)
	if err != nil {
		return ArchiveCheck{}, err
	}
	chk := ArchiveCheck{ID: ar.Header().ID}
	for {
		rec, err := ar.Next()
		if err == io.EOF {
			chk.End, _ = ar.End()
			return chk, nil
		}
		if err != nil {
			return ArchiveCheck{}, err
		}
		if a, ok := rec.(wire.ArchiveAccount); ok {
			chk.Account = a
		}
	}
}

// RestoredDevice is the device a restore makes: its identity, and the list
// that names it, as the relay took it.
type RestoredDevice struct {
	Self Address
	List wire.DeviceList
}

// maxListRaces bounds how often a restore follows a newer list the relay
// holds before it gives up: each round is a device linked or removed at
// the same moment.
const maxListRaces = 4

// JoinAccount signs the generation of the account's list that adds a new
// device with identity id, from the list the archive holds, and has the
// relay take it through pub (compare-and-set). A relay that holds a later
// list (devices linked or removed since the backup) answers stale with it;
// that list, once checked signed by the same account key and later than
// the archive's, is the one the new device joins. A relay that keeps no
// lists (ErrDeviceListsUnsupported) leaves the list to the profile alone.
// A list the relay took spends its device number even if the restore then
// stops (as a broken link ceremony does).
func JoinAccount(ctx context.Context, pub DeviceListPublisher, key *AccountKey, held wire.DeviceList, id *Identity, now time.Time) (RestoredDevice, error) {
	if key == nil || key.Public() != held.AccountKey {
		return RestoredDevice{}, fmt.Errorf("restore: the archive's account key does not sign its device list: %w", ErrArchiveDamaged)
	}
	var floor uint32
	for range maxListRaces {
		number := max(NextDeviceNumber(held), floor)
		e := DeviceEntryFor(id, held.User, held.AccountKey, number, now.Unix())
		next, err := NextDeviceList(key, held, e)
		if err != nil {
			return RestoredDevice{}, err
		}
		self := Address{User: held.User, Device: number}
		err = pub.PublishDeviceList(ctx, next)
		var refused *DeviceListRefusedError
		switch {
		case err == nil, errors.Is(err, ErrDeviceListsUnsupported):
			return RestoredDevice{Self: self, List: next}, nil
		case errors.Is(err, ErrDeviceNumberTaken):
			// A restore that stopped after the relay registered this
			// number to its identity, or a number a later list used:
			// the next one is tried (a later list then answers stale).
			floor = number + 1
		case errors.As(err, &refused) && refused.Reason == wire.DeviceListStale && refused.Current != nil:
			cur := *refused.Current
			if !laterListOf(cur, held) {
				return RestoredDevice{}, fmt.Errorf("restore: the relay holds a device list this account did not sign: %w", err)
			}
			held = cur
		default:
			return RestoredDevice{}, fmt.Errorf("restore: publish the device list naming %s: %w", self, err)
		}
	}
	return RestoredDevice{}, errors.New("restore: the account's device list kept changing; try again")
}

// ErrDeviceNumberTaken means the relay will not let a new device in under
// its number: the address is registered to another identity (a restore
// that stopped after reaching the relay), or a list later than the
// archive's used the number. JoinAccount moves on to the next number.
var ErrDeviceNumberTaken = errors.New("the relay has this device number registered to another identity")

// laterListOf reports whether cur is a list of the same account as held,
// signed by its key, of a later generation: one a restore may build on.
func laterListOf(cur, held wire.DeviceList) bool {
	if cur.User != held.User || cur.AccountKey != held.AccountKey || cur.Generation <= held.Generation {
		return false
	}
	msg, err := deviceListMessage(cur)
	return err == nil && ed25519.Verify(cur.AccountKey[:], msg, cur.Signature[:])
}

// CreateRestoredProfile writes a restored device's profile in one
// transaction: its identity and first prekeys, the account with its key
// and the list that names the device, and the start of the archive's
// import (the records after the account's).
func CreateRestoredProfile(ctx context.Context, st Store, relayURL string, id *Identity, dev RestoredDevice, key *AccountKey, chk ArchiveCheck, r Randomness, now time.Time) error {
	if r == nil {
		r = SystemRandom{}
	}
	recs, err := freshPreKeys(r, id, 1, now, true)
	if err != nil {
		return err
	}
	idRec, _ := id.MarshalBinary()
	list, err := wire.EncodeDeviceList(dev.List)
	if err != nil {
		return err
	}
	seed, _ := key.MarshalBinary()
	plans := []Plan{
		Bootstrap{Self: dev.Self, RelayURL: relayURL, Identity: idRec, PreKeys: recs},
		CreateAccount{Key: seed, List: list},
		ImportStart{Archive: chk.ID, Next: 1, Total: chk.End.Records, At: now},
	}
	if _, err := st.ApplyBatch(ctx, plans); err != nil {
		return fmt.Errorf("store the restored profile of %s: %w", dev.Self, err)
	}
	return nil
}

// Bounds of an import batch: a transaction short enough not to hold the
// writer long, long enough that ten thousand messages take a few dozen.
const (
	ImportBatchRecords = 500
	importBatchBytes   = 4 << 20
)

// ImportArchive stores the records of ar, an archive whose import st
// started (CreateRestoredProfile), from where the import stands, in
// batches of at most batch records (ImportBatchRecords when 0), each one
// transaction. progress, when set, is called after each batch.
func ImportArchive(ctx context.Context, st Store, ar *ArchiveReader, batch int, progress func(ImportState)) (ImportState, error) {
	return importArchive(ctx, st, ar, batch, progress, nil)
}

// importArchive is ImportArchive storing only the records keep keeps
// (all when nil); the others count as stored.
func importArchive(ctx context.Context, st Store, ar *ArchiveReader, batch int, progress func(ImportState), keep func(wire.ArchiveRecord) bool) (ImportState, error) {
	if batch <= 0 {
		batch = ImportBatchRecords
	}
	id := ar.Header().ID
	state, ok, err := st.ImportState(ctx, id)
	if err != nil {
		return ImportState{}, err
	}
	if !ok {
		return ImportState{}, ErrNotRestoring
	}
	var pending []wire.ArchiveRecord
	var size int
	from, to := state.Next, state.Next
	flush := func() error {
		if to == from && (state.Done || from < state.Total) {
			return nil
		}
		p := ImportRecords{Archive: id, From: from, To: to, Total: state.Total, Records: pending}
		if _, err := st.Apply(ctx, p); err != nil {
			return fmt.Errorf("import records %d to %d: %w", p.From, p.To, err)
		}
		if state, ok, err = st.ImportState(ctx, id); err != nil || !ok {
			return fmt.Errorf("read the import's progress: %w", err)
		}
		if progress != nil {
			progress(state)
		}
		from, to, pending, size = state.Next, state.Next, nil, 0
		return nil
	}
	for {
		rec, err := ar.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return state, err
		}
		if ar.Index() < from || rec.ArchiveKind() == wire.ArchiveKindAccount {
			continue
		}
		if m, ok := rec.(wire.ArchiveMessage); ok && ar.keyed && m.Direction == uint8(DirectionOut) && m.State == uint8(SentPending) {
			// A message the linking device sent and still delivers: its
			// lanes stay there; here it is a sent copy (docs/reliability.md).
			m.State = uint8(SentCopied)
			rec = m
		}
		to = ar.Index() + 1
		if keep == nil || keep(rec) {
			pending = append(pending, rec)
			size += archiveRecordSize(rec)
		}
		if to-from >= uint64(batch) || size >= importBatchBytes {
			if err := flush(); err != nil {
				return state, err
			}
		}
		if err := ctx.Err(); err != nil {
			return state, err
		}
	}
	if end, _ := ar.End(); end.Records != state.Total {
		return state, fmt.Errorf("%w: %d records, the import expects %d", ErrArchiveDamaged, end.Records, state.Total)
	}
	if !state.Done {
		if err := flush(); err != nil {
			return state, err
		}
	}
	return state, nil
}

// archiveRecordSize is about what a record weighs in a batch.
func archiveRecordSize(r wire.ArchiveRecord) int {
	switch r := r.(type) {
	case wire.ArchiveMessage:
		return 64 + len(r.Body)
	case wire.ArchiveGroupMessage:
		return 64 + len(r.Body)
	case wire.ArchiveGroup:
		n := 64
		for _, c := range r.Changes {
			n += 64 + len(c.Frame)
		}
		return n
	}
	return 64
}
