package profile

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// Connect says when an opened profile connects to its relay.
type Connect uint8

// Connection modes.
const (
	// ConnectOnUse connects at the first call that needs the relay, so that
	// commands that never touch the network work offline (the command line).
	ConnectOnUse Connect = iota
	// ConnectInBackground starts connecting at once and keeps reconnecting;
	// Open does not wait (the interface starts while the relay is down).
	ConnectInBackground
	// ConnectNow connects before Open returns and fails when the relay
	// cannot be reached (the benchmark).
	ConnectNow
)

// Options configure Open and Create. The zero value opens with the
// passphrase left empty, connecting on first use.
type Options struct {
	// Passphrase unlocks the profile (and seals a new one).
	Passphrase []byte
	// Connect says when to connect to the relay.
	Connect Connect
	// Transport tunes the relay connection (backoff, logger, pinned relay).
	Transport transport.ClientOptions
	// Wrap, when set, wraps the relay connection that the engine is given:
	// the demo puts its fault switches there.
	Wrap func(engine.Relay) engine.Relay
	// Engine is passed to engine.Open (clock, randomness, loop policy...);
	// its Store and Relay are set by Open.
	Engine engine.Config
	// Store is passed to the store (clock, failpoints; KDF for Create).
	Store store.Options
	// RelayCA, for Create: PEM certificates of a private CA that signs the
	// relay's TLS certificate (default: the system's roots).
	RelayCA []byte
	// RefreshPreKeys refreshes the prekeys right after the open when they
	// are stale (Client.RefreshPreKeysIfStale), best effort: for commands that talk to the relay anyway, so that
	// a bundle that could not be published at init goes out and rotation
	// happens without a long-running process.
	RefreshPreKeys bool
}

// relayConn is the connection a profile holds: a transport.Conn, or one
// made on first use.
type relayConn interface {
	engine.Relay
	State() transport.State
	RelayID() [32]byte
	Close() error
}

// Profile is an open profile: its engine client over the store and the
// relay connection. Close releases both.
type Profile struct {
	// Dir is the profile directory.
	Dir string
	// Client is the profile's engine.
	Client *engine.Client
	// Relay is how the profile reaches its relay, as it was opened (a relay
	// ID pinned since is in RelayID).
	Relay engine.RelaySettings

	relay relayConn
	st    *store.DB
	self  engine.Address
	id    *engine.Identity
	opts  transport.ClientOptions // as given to Open or Create
}

// SetRelay replaces the profile's relay settings; they take effect at the
// next open. A new URL drops the pinned relay ID: the first relay reached
// there is pinned.
func (p *Profile) SetRelay(ctx context.Context, s engine.RelaySettings) error {
	if s.URL == "" {
		return errors.New("set relay: no URL")
	}
	if err := transport.CheckURL(s.URL); err != nil {
		return err
	}
	if len(s.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(s.CA) {
		return errors.New("set relay: the CA file holds no PEM certificate")
	}
	cur, err := p.RelaySettings(ctx)
	if err != nil {
		return err
	}
	if s.URL != cur.URL {
		s.ID = [32]byte{}
	}
	if _, err := p.st.Apply(ctx, engine.SetRelay{Relay: s}); err != nil {
		return fmt.Errorf("set relay: %w", err)
	}
	return nil
}

// RelaySettings reads the profile's relay settings as stored now.
func (p *Profile) RelaySettings(ctx context.Context) (engine.RelaySettings, error) {
	prof, err := p.st.Profile(ctx)
	if err != nil {
		return engine.RelaySettings{}, err
	}
	return prof.Relay, nil
}

// TrustRelay connects to the profile's relay ignoring the pinned ID,
// authenticates, and pins the ID that relay presents: the user's
// acceptance of a relay that was replaced on purpose.
func (p *Profile) TrustRelay(ctx context.Context) ([32]byte, error) {
	s, err := p.RelaySettings(ctx)
	if err != nil {
		return [32]byte{}, err
	}
	s.ID = [32]byte{}
	o := p.opts
	o.RelayID, o.OnPin = [32]byte{}, nil
	o, err = transportOptions(p.st, s, o)
	if err != nil {
		return [32]byte{}, err
	}
	o.OnPin = nil
	c, err := transport.Dial(ctx, s.URL, p.self, p.id, o)
	if err != nil {
		return [32]byte{}, err
	}
	s.ID = c.RelayID()
	c.Close()
	if _, err := p.st.Apply(ctx, engine.SetRelay{Relay: s}); err != nil {
		return [32]byte{}, fmt.Errorf("pin relay: %w", err)
	}
	if l, ok := p.relay.(*lazyRelay); ok {
		// The connection this profile makes from now on goes to the
		// relay as the settings are now: URL, CA and the new pin.
		o.RelayID = s.ID
		l.reconfigure(s.URL, o)
	}
	return s.ID, nil
}

// RelayState reports the relay connection ("connected", "connecting",
// "disconnected"...).
func (p *Profile) RelayState() transport.State { return p.relay.State() }

// RelayID returns the ID of the relay the profile last authenticated to
// (zero before the first connection).
func (p *Profile) RelayID() [32]byte { return p.relay.RelayID() }

// Close stops the relay connection and then the client (waiting for its
// loop, and closing the store): in that order no authentication can still
// be storing its pin into a closed store. It does not mark events presented
// (see PresentAll).
func (p *Profile) Close() error {
	err := p.relay.Close()
	return errors.Join(err, p.Client.Close())
}

// PresentAll takes every waiting event off the client's channel and marks
// them presented: for a command whose printed output was the presentation.
// A reader (OpenReader) marks nothing: the events are the holder's to
// present.
func (p *Profile) PresentAll(ctx context.Context) error {
	if p.ReadOnly() {
		return nil
	}
	for {
		select {
		case <-p.Client.Events():
			continue
		default:
		}
		return p.Client.MarkPresented(ctx)
	}
}

// Error is a profile that could not be opened or made. Its message names
// the cause in one line; errors.Is matches the engine error under it:
// engine.ErrWrongPassphrase, engine.ErrProfileOpen, engine.ErrProfileTooNew,
// engine.ErrNoProfile, engine.ErrProfileExists or engine.ErrRelayUnreachable.
type Error struct {
	Dir string
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.err }

// describe names the cause of a failed open or create in one line.
func describe(dir string, err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, engine.ErrProfileOpen):
		msg = "profile " + dir + " is open in another process"
	case errors.Is(err, engine.ErrWrongPassphrase):
		msg = "wrong passphrase for profile " + dir
	case errors.Is(err, engine.ErrNoProfile):
		msg = fmt.Sprintf("no profile at %s (run \"parley init\")", dir)
	case errors.Is(err, engine.ErrProfileExists):
		msg = fmt.Sprintf("profile %s already exists; init never overwrites one", dir)
	case errors.Is(err, engine.ErrProfileExposed):
		// The store's message names the file and the fix.
	case errors.Is(err, engine.ErrProfileTooNew):
		msg = fmt.Sprintf("profile %s was written by a newer parley; this build cannot read it", dir)
	case errors.Is(err, engine.ErrRelayUnreachable):
		msg = "relay unreachable: " + msg
	}
	return &Error{Dir: dir, msg: msg, err: err}
}

// Open opens the profile in dir: the store (unlocked with the passphrase),
// the identity, the relay connection and the engine.
func Open(ctx context.Context, dir string, o Options) (*Profile, error) {
	st, err := store.Open(ctx, dir, o.Passphrase, o.Store)
	if err != nil {
		return nil, describe(dir, err)
	}
	p, err := attach(ctx, dir, st, o)
	if err != nil {
		st.Close()
		return nil, describe(dir, err)
	}
	if o.RefreshPreKeys {
		// Best effort: the command itself reports whether the relay is
		// reachable.
		_, _ = p.Client.RefreshPreKeysIfStale(ctx)
	}
	return p, nil
}

// OpenReader opens the profile in dir for reading only, beside the process
// that holds it (a running parley tui): no lock, no migration, no write,
// and the relay is never contacted (ConnectOnUse, and nothing that reads
// needs it). Any write fails with engine.ErrProfileOpen; PresentAll does
// nothing, so that the holder's resync is not swallowed. For the commands
// that only read (history, inbox, outbox, trace) when Open found the
// profile held.
func OpenReader(ctx context.Context, dir string, o Options) (*Profile, error) {
	st, err := store.OpenReader(ctx, dir, o.Passphrase)
	if err != nil {
		return nil, describe(dir, err)
	}
	o.Connect, o.Wrap = ConnectOnUse, nil
	p, err := attach(ctx, dir, st, o)
	if err != nil {
		st.Close()
		return nil, describe(dir, err)
	}
	return p, nil
}

// ReadOnly reports whether the profile was opened by OpenReader.
func (p *Profile) ReadOnly() bool { return p.st.ReadOnly() }

// attach connects an open store to its relay and opens the engine on both.
func attach(ctx context.Context, dir string, st *store.DB, o Options) (*Profile, error) {
	if !st.ReadOnly() {
		// A profile made before accounts existed gets its account here,
		// in one transaction (engine.EnsureAccount).
		now := time.Now
		if o.Engine.Now != nil {
			now = o.Engine.Now
		}
		// The system's randomness, as at init (engine.CreateProfile): a
		// deterministic Engine.Random keeps giving what it gave before.
		if _, err := engine.EnsureAccount(ctx, st, nil, now()); err != nil {
			return nil, err
		}
	}
	self, relay, id, err := engine.LoadIdentity(ctx, st)
	if err != nil {
		return nil, err
	}
	topts, err := transportOptions(st, relay, o.Transport)
	if err != nil {
		return nil, err
	}
	url := relay.URL
	var conn relayConn
	switch o.Connect {
	case ConnectInBackground:
		conn, err = transport.NewConn(url, self, id, topts)
	case ConnectNow:
		conn, err = transport.Dial(ctx, url, self, id, topts)
	default:
		conn = &lazyRelay{url: url, self: self, id: id, opts: topts}
	}
	if err != nil {
		return nil, err
	}
	cfg := o.Engine
	cfg.Store, cfg.Relay = st, conn
	if !AcceptsAll(dir) {
		cfg.CapStrangers, cfg.Requests = true, true
	}
	if o.Wrap != nil {
		cfg.Relay = o.Wrap(conn)
	}
	// Files: partial downloads and upload records live in the profile
	// (0700, files 0600); the blob store is the relay connection's, once
	// it has one, or the wrapper's when it wraps blobs too (the demo's
	// fault relay).
	if cfg.Files.Dir == "" {
		cfg.Files.Dir = filepath.Join(dir, "files")
	}
	if cfg.Files.Blobs == nil {
		if b, ok := cfg.Relay.(engine.BlobRelay); ok && o.Wrap != nil {
			cfg.Files.Blobs = b
		} else if b, ok := any(conn).(engine.BlobRelay); ok {
			cfg.Files.Blobs = b
		}
	}
	c, err := engine.Open(ctx, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Profile{Dir: dir, Client: c, Relay: relay, relay: conn, st: st, self: self, id: id, opts: o.Transport}, nil
}

// transportOptions adds the profile's relay settings to the caller's
// transport options: the pinned relay ID (or, when none is pinned yet, a
// hook that stores the first one), and the private CA.
func transportOptions(st *store.DB, relay engine.RelaySettings, o transport.ClientOptions) (transport.ClientOptions, error) {
	if o.RelayID == ([32]byte{}) {
		o.RelayID = relay.ID
	}
	if len(relay.CA) > 0 && o.RootCAs == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(relay.CA) {
			return o, fmt.Errorf("the profile's relay CA holds no PEM certificate (set another with parley relay-settings --ca FILE)")
		}
		o.RootCAs = pool
	}
	if o.RelayID == ([32]byte{}) && o.OnPin == nil {
		url := relay.URL
		o.OnPin = func(id [32]byte) error {
			// A pin that fails to store is stored at the next
			// authentication; one whose settings changed meanwhile is
			// not stored at all.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := st.Apply(ctx, engine.PinRelay{URL: url, ID: id})
			if errors.Is(err, engine.ErrConflict) {
				return nil
			}
			return err
		}
	}
	return o, nil
}

// Create makes a new profile for self in dir, its identity and first
// prekeys, with relayURL as its relay, and opens it. Nothing is published:
// the first connection (or RefreshPreKeys) does that. A failure leaves no profile
// behind.
func Create(ctx context.Context, dir string, self engine.Address, relayURL string, o Options) (*Profile, error) {
	st, err := store.Create(ctx, dir, o.Passphrase, o.Store)
	if err != nil {
		return nil, describe(dir, err)
	}
	now := time.Now
	if o.Engine.Now != nil {
		now = o.Engine.Now
	}
	if _, err := engine.CreateProfile(ctx, st, self, relayURL, o.Engine.Random, now()); err != nil {
		st.Close()
		Remove(dir)
		return nil, describe(dir, err)
	}
	if len(o.RelayCA) > 0 {
		if !x509.NewCertPool().AppendCertsFromPEM(o.RelayCA) {
			st.Close()
			Remove(dir)
			return nil, describe(dir, errors.New("the relay CA file holds no PEM certificate"))
		}
		if _, err := st.Apply(ctx, engine.SetRelay{Relay: engine.RelaySettings{URL: relayURL, CA: o.RelayCA}}); err != nil {
			st.Close()
			Remove(dir)
			return nil, describe(dir, err)
		}
	}
	p, err := attach(ctx, dir, st, o)
	if err != nil {
		st.Close()
		Remove(dir)
		return nil, describe(dir, err)
	}
	return p, nil
}

// Remove deletes the profile files in dir (a profile just made that must
// not stay, or the demo's reinstall), and dir itself when it is then empty.
// The profile must be closed.
func Remove(dir string) error {
	var errs []error
	if err := forgetInsecureRelay(dir); err != nil {
		errs = append(errs, err)
	}
	if err := forgetStrangers(dir); err != nil {
		errs = append(errs, err)
	}
	for _, f := range store.Files() {
		if err := os.Remove(dir + string(os.PathSeparator) + f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		var pe *os.PathError
		if !errors.As(err, &pe) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Account returns what the profile knows of its account: its key (on the
// device that made it) and the device list it holds. A profile made before
// accounts and opened read-only since has none (engine.ErrNoAccount).
func (p *Profile) Account(ctx context.Context) (engine.Account, error) {
	return engine.LoadAccount(ctx, p.st)
}

// Exists reports whether dir holds a profile's files.
func Exists(dir string) bool {
	for _, f := range store.Files() {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// CreateLinked makes the profile of a device linked to an account in dir,
// from what the linking gave it (engine.CreateLinkedProfile: one
// transaction, with keep, the history it keeps of the package's), and
// records its setting for strangers. A failure leaves no
// profile behind.
func CreateLinked(ctx context.Context, dir, relayURL string, id *engine.Identity, number uint32, pkg wire.LinkPackageData, keep engine.HistoryChoice, o Options) (engine.Address, error) {
	if Exists(dir) {
		return engine.Address{}, describe(dir, fmt.Errorf("%s holds a profile already: link into a new directory", dir))
	}
	st, err := store.Create(ctx, dir, o.Passphrase, o.Store)
	if err != nil {
		return engine.Address{}, describe(dir, err)
	}
	now := time.Now
	if o.Engine.Now != nil {
		now = o.Engine.Now
	}
	// The setting first: a profile is whole once its transaction commits.
	err = SetAcceptAll(dir, pkg.AcceptAll)
	var self engine.Address
	if err == nil {
		self, err = engine.CreateLinkedProfile(ctx, st, relayURL, id, number, pkg, keep, o.Engine.Random, now())
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		Remove(dir)
		return engine.Address{}, describe(dir, err)
	}
	return self, nil
}
