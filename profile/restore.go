package profile

import (
	"context"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
)

// CreateRestored makes the profile of a device restored from a backup in
// dir (engine.CreateRestoredProfile: one transaction, which also starts the
// archive's import). A failure leaves no profile behind.
func CreateRestored(ctx context.Context, dir, relayURL string, id *engine.Identity, dev engine.RestoredDevice, key *engine.AccountKey, chk engine.ArchiveCheck, o Options) error {
	if Exists(dir) {
		return describe(dir, engine.ErrNotRestoring)
	}
	st, err := store.Create(ctx, dir, o.Passphrase, o.Store)
	if err != nil {
		return describe(dir, err)
	}
	now := time.Now
	if o.Engine.Now != nil {
		now = o.Engine.Now
	}
	err = engine.CreateRestoredProfile(ctx, st, relayURL, id, dev, key, chk, o.Engine.Random, now())
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		Remove(dir)
		return describe(dir, err)
	}
	return nil
}

// Import stores the records of ar in the profile in dir, from where its
// import stands (engine.ImportArchive); engine.ErrNotRestoring when the
// profile never started importing this archive.
func Import(ctx context.Context, dir string, ar *engine.ArchiveReader, batch int, progress func(engine.ImportState), o Options) (engine.ImportState, error) {
	st, err := store.Open(ctx, dir, o.Passphrase, o.Store)
	if err != nil {
		return engine.ImportState{}, describe(dir, err)
	}
	defer st.Close()
	return engine.ImportArchive(ctx, st, ar, batch, progress)
}

// RestoreState reports where the import of archive stands in the profile
// in dir. A directory whose store was made but whose profile never was (a
// restore killed between the two) is engine.ErrNoProfile: it holds nothing,
// and the restore starts over.
func RestoreState(ctx context.Context, dir string, archive [16]byte, o Options) (engine.ImportState, bool, error) {
	st, err := store.Open(ctx, dir, o.Passphrase, o.Store)
	if err != nil {
		return engine.ImportState{}, false, describe(dir, err)
	}
	defer st.Close()
	if _, err := st.Profile(ctx); err != nil {
		return engine.ImportState{}, false, err
	}
	return st.ImportState(ctx, archive)
}
