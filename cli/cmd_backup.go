package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// Backup and restore (issue 34): `parley backup --to FILE` on the device
// holding the account key writes a sealed archive (engine/archive.go);
// `parley restore FILE --profile DIR --relay URL` makes a new device of the
// account from it. Both print progress on stderr when it is a terminal,
// then messages=N groups=G bytes=B.

// backupKDFFlags adds the archive's Argon2id flags.
func backupKDFFlags(f *flags) func() (engine.ArchiveKDF, error) {
	def := engine.DefaultArchiveKDF
	mem := f.Uint("kdf-memory", uint(def.MemoryKiB/1024), "Argon2id memory in MiB for the backup passphrase (less: faster, and cheaper to guess)")
	passes := f.Uint("kdf-passes", uint(def.Passes), "Argon2id passes over that memory")
	return func() (engine.ArchiveKDF, error) {
		k := engine.ArchiveKDF{Passes: uint32(min(*passes, 1<<31)), MemoryKiB: uint32(min(*mem, 1<<21) * 1024), Threads: def.Threads}
		if err := wire.CheckArchiveKDF(k.Passes, k.MemoryKiB, k.Threads); err != nil {
			return k, usagef("--kdf-memory %d --kdf-passes %d: %v", *mem, *passes, err)
		}
		if lim := engine.RestoreArchiveKDF; k.Exceeds(lim) {
			return k, usagef("--kdf-memory %d --kdf-passes %d: a restore runs at most %d passes over %d MiB", *mem, *passes, lim.Passes, lim.MemoryKiB/1024)
		}
		return k, nil
	}
}

// backupPassphrase reads the archive's passphrase: the file, the
// environment, else the prompt (twice when confirm).
func backupPassphrase(env *cliEnv, file string, confirm bool) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, readError("the backup passphrase file ", file, err)
		}
		return []byte(strings.TrimRight(string(b), "\r\n")), nil
	}
	if p := env.getenv("PARLEY_BACKUP_PASSPHRASE"); p != "" {
		return []byte(p), nil
	}
	if env.readSecret == nil {
		return nil, errors.New("no backup passphrase: use --backup-passphrase-file or PARLEY_BACKUP_PASSPHRASE")
	}
	p, err := env.secret("backup passphrase: ")
	if err != nil {
		return nil, err
	}
	if confirm {
		q, err := env.secret("again: ")
		if err != nil {
			return nil, err
		}
		if string(p) != string(q) {
			return nil, errors.New("the backup passphrases differ")
		}
	}
	if len(p) == 0 {
		return nil, errors.New("an empty backup passphrase")
	}
	return p, nil
}

// progressLine rewrites one line of stderr when it is a terminal; it says
// nothing otherwise.
type progressLine struct {
	env  *cliEnv
	last time.Time
	used bool
}

func (p *progressLine) show(format string, a ...any) {
	if !p.env.stderrTerminal || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.used = time.Now(), true
	fmt.Fprintf(p.env.stderr, "\r\x1b[K"+format, a...)
}

func (p *progressLine) done() {
	if p.used {
		fmt.Fprint(p.env.stderr, "\r\x1b[K")
	}
}

func cmdBackup(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	to := f.String("to", "", "the archive to write (replaced whole, never in part)")
	passFile := f.String("backup-passphrase-file", "", "read the backup's passphrase from this file (default $PARLEY_BACKUP_PASSPHRASE, else a prompt, twice)")
	kdf := backupKDFFlags(f)
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *to == "" {
		return usagef("--to is required")
	}
	params, err := kdf()
	if err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	pass, err := backupPassphrase(env, *passFile, true)
	if err != nil {
		return err
	}
	bar := &progressLine{env: env}
	var sum engine.BackupSummary
	err = writeAtomically(*to, func(w *os.File) error {
		var err error
		sum, err = p.Client.Backup(ctx, w, pass, params, func(n uint64) { bar.show("backup: %d records", n) })
		return err
	})
	bar.done()
	if err != nil {
		return fmt.Errorf("no backup written: %w", err)
	}
	printer{env.stdout, *f.json}.record([]kv{{"messages", sum.Messages}, {"groups", sum.Groups}, {"bytes", sum.Bytes}})
	return nil
}

// writeAtomically writes path through write as a temporary file in the
// same directory, synced, then renamed over path, and the directory
// synced: a reader sees the old file or the whole new one, and a write
// killed part way leaves only a file named as partial.
func writeAtomically(path string, write func(*os.File) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".partial-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// listPublisher publishes a device list over a connection of its own,
// authenticated as the device the list adds (the one whose signing key is
// id's): a restore's new device, which has no profile yet.
type listPublisher struct {
	url  string
	id   *engine.Identity
	opts transport.ClientOptions
}

// PublishDeviceList implements engine.DeviceListPublisher.
func (p listPublisher) PublishDeviceList(ctx context.Context, l wire.DeviceList) error {
	key := p.id.Public().SigningKey
	var self engine.Address
	for _, e := range l.Entries {
		if e.SigningKey == key {
			self = engine.Address{User: l.User, Device: e.Number}
		}
	}
	c, err := transport.Dial(ctx, p.url, self, p.id, p.opts)
	var se *transport.ServerError
	if errors.As(err, &se) && (se.Code == wire.ErrorAddressTaken || se.Code == wire.ErrorAuthFailed) {
		return fmt.Errorf("%s: %w", self, engine.ErrDeviceNumberTaken)
	}
	if err != nil {
		return fmt.Errorf("reach the relay as %s: %w", self, err)
	}
	defer c.Close()
	return c.PublishDeviceList(ctx, l)
}

func cmdRestore(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	relayFlag := f.String("relay", "", "the account's relay URL, ws://HOST:PORT or wss://HOST")
	passFile := f.String("backup-passphrase-file", "", "read the backup's passphrase from this file (default $PARLEY_BACKUP_PASSPHRASE, else a prompt)")
	batch := f.Int("batch", engine.ImportBatchRecords, "records stored per transaction")
	def := store.DefaultKDF()
	kdfMemory := f.Uint("kdf-memory", uint(def.MemoryKiB/1024), "Argon2id memory in MiB for the new profile's passphrase (as for init)")
	kdfPasses := f.Uint("kdf-passes", uint(def.Time), "Argon2id passes over that memory (as for init)")
	ops, err := f.parse(env, args, 1, 1)
	if err != nil {
		return err
	}
	kdf := store.KDFParams{Time: uint32(min(*kdfPasses, 1<<31)), MemoryKiB: uint32(min(*kdfMemory, 1<<21) * 1024), Threads: def.Threads}
	if err := store.CheckKDF(kdf); err != nil {
		return usagef("--kdf-memory %d --kdf-passes %d: %v", *kdfMemory, *kdfPasses, err)
	}
	if *relayFlag == "" {
		return usagef("--relay is required")
	}
	if err := transport.CheckURL(*relayFlag); err != nil {
		return usagef("--relay %s is not a relay URL: want ws://HOST:PORT or wss://HOST", textValue(*relayFlag))
	}
	file, dir := ops[0], f.profileDir(env)
	env.relayURL = *relayFlag
	bpass, err := backupPassphrase(env, *passFile, false)
	if err != nil {
		return err
	}
	// The whole archive is read and checked before anything is written.
	chk, err := checkArchiveFile(file, bpass)
	if err != nil {
		return fmt.Errorf("nothing restored: %w", err)
	}
	resume := profile.Exists(dir)
	pass, _, err := f.passphrase(env, dir, !resume)
	if err != nil {
		return err
	}
	opts := profile.Options{Passphrase: pass, Store: store.Options{KDF: kdf}}
	if resume {
		_, ok, err := profile.RestoreState(ctx, dir, chk.ID, opts)
		switch {
		case errors.Is(err, engine.ErrNoProfile):
			// A restore killed while it made the profile: nothing is in
			// it, and it starts over.
			if err := profile.Remove(dir); err != nil {
				return err
			}
			resume = false
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("%s holds a profile already that is not a restore of this archive: restore into a new directory", dir)
		}
	}
	if !resume {
		key, err := engine.UnmarshalAccountKey(chk.Account.Key[:])
		if err != nil {
			return fmt.Errorf("nothing restored: %w", engine.ErrArchiveDamaged)
		}
		id, err := engine.NewIdentity(engine.SystemRandom{})
		if err != nil {
			return err
		}
		dev, err := engine.JoinAccount(ctx, listPublisher{url: *relayFlag, id: id}, key, chk.Account.List, id, time.Now())
		if err != nil {
			return fmt.Errorf("nothing restored: %w", err)
		}
		if err := profile.CreateRestored(ctx, dir, *relayFlag, id, dev, key, chk, opts); err != nil {
			return fmt.Errorf("%s is in the account's device list, but its profile was not written: %w", dev.Self, err)
		}
		if _, plain := transport.Plaintext(*relayFlag); plain {
			if err := profile.AllowInsecureRelay(dir, *relayFlag); err != nil {
				return fmt.Errorf("record the relay URL: %w", err)
			}
		}
	}
	in, err := os.Open(file)
	if err != nil {
		return readError("the archive ", file, err)
	}
	defer in.Close()
	ar, err := engine.OpenArchive(in, bpass, engine.RestoreArchiveKDF)
	if err != nil {
		return err
	}
	bar := &progressLine{env: env}
	st, err := profile.Import(ctx, dir, ar, *batch, func(s engine.ImportState) {
		bar.show("restore: %d of %d records", s.Next, s.Total)
	}, opts)
	bar.done()
	if errors.Is(err, engine.ErrNotRestoring) {
		return fmt.Errorf("%s holds a profile already that is not a restore of this archive: restore into a new directory", dir)
	}
	if err != nil {
		return fmt.Errorf("the restore stopped (run it again to go on): %w", err)
	}
	size := int64(0)
	if fi, err := in.Stat(); err == nil {
		size = fi.Size()
	}
	printer{env.stdout, *f.json}.record([]kv{{"messages", st.Messages}, {"groups", chk.End.Groups}, {"bytes", size}})
	return nil
}

// checkArchiveFile reads the archive at path through (engine.CheckArchive).
func checkArchiveFile(path string, pass []byte) (engine.ArchiveCheck, error) {
	in, err := os.Open(path)
	if err != nil {
		return engine.ArchiveCheck{}, readError("the archive ", path, err)
	}
	defer in.Close()
	return engine.CheckArchive(in, pass, engine.RestoreArchiveKDF)
}
