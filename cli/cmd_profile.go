package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
)

// Commands about the profile itself: making it, its identity and its trust
// in peers' identities, and pruning what it keeps.

func cmdRelaySettings(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	url := f.String("url", "", "the relay's new URL (ws://HOST:PORT or wss://HOST); drops the pinned relay ID")
	caFile := f.String("ca", "", "verify the relay's TLS certificate with the CA certificates in this PEM file")
	systemRoots := f.Bool("system-roots", false, "verify the relay's TLS certificate with the system's roots again")
	accept := f.Bool("accept-new-id", false, "connect, and pin the ID the relay presents now (a relay replaced on purpose)")
	insecure := f.Bool("insecure-relay", false, "accept a plaintext ws:// URL to a host that is not loopback")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *url != "" {
		if err := transport.CheckURL(*url); err != nil {
			return usagef("--url %s is not a relay URL: want ws://HOST:PORT or wss://HOST", textValue(*url))
		}
		if err := checkPlaintext(env, "relay-settings", *url, *insecure); err != nil {
			return err
		}
	}
	if *caFile != "" && *systemRoots {
		return usagef("--ca and --system-roots exclude each other")
	}
	// Without a flag it only shows them.
	f.reader = *url == "" && *caFile == "" && !*systemRoots && !*accept && !*insecure
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	s, err := p.RelaySettings(ctx)
	if err != nil {
		return err
	}
	changed := false
	if *url != "" && *url != s.URL {
		s.URL, changed = *url, true
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return readError("the CA file ", *caFile, err)
		}
		s.CA, changed = pem, true
	}
	if *systemRoots && len(s.CA) > 0 {
		s.CA, changed = nil, true
	}
	if changed {
		if err := p.SetRelay(ctx, s); err != nil {
			return err
		}
	}
	if _, plain := transport.Plaintext(s.URL); plain && *insecure {
		if err := profile.AllowInsecureRelay(f.profileDir(env), s.URL); err != nil {
			return fmt.Errorf("record --insecure-relay: %w", err)
		}
	}
	if *accept {
		if _, err := p.TrustRelay(ctx); err != nil {
			return err
		}
		// A replaced relay holds nothing of this device yet.
		if err := p.Client.RefreshPreKeys(ctx); err != nil {
			fmt.Fprintf(env.stderr, "parley relay-settings: bundle not published yet: %s; the next command that reaches the relay publishes it\n", textLine(explain(env, err)))
		}
	}
	if s, err = p.RelaySettings(ctx); err != nil {
		return err
	}
	id, ca := "not pinned yet (pinned at the next connection)", "system roots"
	if s.ID != ([32]byte{}) {
		id = hex.EncodeToString(s.ID[:])
	}
	if len(s.CA) > 0 {
		ca = "private CA"
	}
	printer{env.stdout, *f.json}.record([]kv{{"url", s.URL}, {"relay_id", id}, {"tls_roots", ca}})
	return nil
}

func cmdInit(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	addrFlag := f.String("address", "", "this device's address, user/device")
	relayFlag := f.String("relay", "", "relay URL, ws://HOST:PORT or wss://HOST")
	caFlag := f.String("relay-ca", "", "verify the relay's TLS certificate with the CA certificates in this PEM file (a private CA)")
	insecure := f.Bool("insecure-relay", false, "accept a plaintext ws:// relay URL to a host that is not loopback")
	acceptAll := f.Bool("accept-all", false, "treat every device alike, without the tighter limits for devices not accepted (the old behaviour, for bots)")
	def := store.DefaultKDF()
	kdfMemory := f.Uint("kdf-memory", uint(def.MemoryKiB/1024), "Argon2id memory in MiB for the passphrase: less opens the profile faster and makes a stolen profile's passphrase cheaper to guess (for throw-away profiles and tests)")
	kdfPasses := f.Uint("kdf-passes", uint(def.Time), "Argon2id passes over that memory (fewer: faster, and cheaper to guess)")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	kdf := store.KDFParams{Time: uint32(min(*kdfPasses, 1<<31)), MemoryKiB: uint32(min(*kdfMemory, 1<<21) * 1024), Threads: def.Threads}
	if err := store.CheckKDF(kdf); err != nil {
		return usagef("--kdf-memory %d --kdf-passes %d: %v", *kdfMemory, *kdfPasses, err)
	}
	if *addrFlag == "" || *relayFlag == "" {
		return usagef("--address and --relay are required")
	}
	if err := transport.CheckURL(*relayFlag); err != nil {
		return usagef("--relay %s is not a relay URL: want ws://HOST:PORT or wss://HOST", textValue(*relayFlag))
	}
	if err := checkPlaintext(env, "init", *relayFlag, *insecure); err != nil {
		return err
	}
	var ca []byte
	if *caFlag != "" {
		var err error
		if ca, err = os.ReadFile(*caFlag); err != nil {
			return readError("the CA file ", *caFlag, err)
		}
	}
	self, err := parsePeer(*addrFlag)
	if err != nil {
		return err
	}
	dir := f.profileDir(env)
	pass, _, err := f.passphrase(env, dir, true)
	if err != nil {
		return err
	}
	p, err := profile.Create(ctx, dir, self, *relayFlag, profile.Options{Passphrase: pass, RelayCA: ca, Store: store.Options{KDF: kdf}})
	if err != nil {
		return err
	}
	if _, plain := transport.Plaintext(*relayFlag); plain {
		if err := profile.AllowInsecureRelay(dir, *relayFlag); err != nil {
			return fmt.Errorf("record --insecure-relay: %w", err)
		}
	}
	if err := profile.SetAcceptAll(dir, *acceptAll); err != nil {
		return fmt.Errorf("record --accept-all: %w", err)
	}
	key := p.Client.Identity()
	published := true
	if err := p.Client.RefreshPreKeys(ctx); err != nil {
		if errors.Is(err, transport.ErrAddressTaken) {
			// The relay says so: this profile could never connect.
			p.Close()
			if rerr := profile.Remove(dir); rerr != nil {
				return fmt.Errorf("%s is registered at the relay to another identity (and removing %s failed: %v)", self, dir, rerr)
			}
			return fmt.Errorf("%s is registered at the relay to another identity: choose another address (nothing was kept)", self)
		}
		published = false
		env.relayURL = *relayFlag
		fmt.Fprintf(env.stderr, "parley init: bundle not published yet: %s; the first command that reaches the relay publishes it\n", textLine(explain(env, err)))
	}
	defer closeProfile(p)
	printer{env.stdout, *f.json}.record([]kv{{"address", self.String()}, {"fingerprint", key.Fingerprint()}, {"published", published}})
	return nil
}

// checkPlaintext refuses a plaintext ws:// URL to a host that is not
// loopback unless the user accepted it with --insecure-relay, and warns when
// they did.
func checkPlaintext(env *cliEnv, cmdName, url string, accepted bool) error {
	host, plain := transport.Plaintext(url)
	if !plain {
		return nil
	}
	if !accepted {
		return usagef("%s is plaintext ws:// to %s, which is not loopback: anyone on the path sees who talks to whom and when; use wss://, or accept it with --insecure-relay", url, host)
	}
	fmt.Fprintf(env.stderr, "parley %s: warning: %s is plaintext ws:// to %s: anyone on the path sees who talks to whom and when (accepted with --insecure-relay)\n", cmdName, url, host)
	return nil
}

func cmdIdentity(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	printer{env.stdout, *f.json}.record([]kv{{"address", p.Client.Self().String()}, {"fingerprint", p.Client.Identity().Fingerprint()}})
	return nil
}

func cmdSafetyNumber(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.reader = true
	peer, _, p, err := f.peerCommand(ctx, env, args, 1)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	n, err := p.Client.Safety(ctx, peer)
	if errors.Is(err, engine.ErrNoIdentityPinned) {
		return fmt.Errorf("no identity of %s known yet: a first message to or from it brings one", peer)
	} else if err != nil {
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"safety_number", n.Number}, {"basis", string(n.Basis)}})
	return nil
}

// cmdTrust shows the identity PEER's relay bundle carries and pins exactly
// that one, only when told to: --yes pins what this run shows, --fingerprint
// pins the key with that fingerprint (and refuses another, as a relay that
// changed the key since it was shown would serve).
func cmdTrust(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	yes := f.Bool("yes", false, "pin the identity this run shows")
	shown := f.String("fingerprint", "", "pin the identity only if its fingerprint is this one (as shown, spaces optional)")
	ops, err := f.parse(env, args, 1, 1)
	if err != nil {
		return err
	}
	peer, err := parsePeer(ops[0])
	if err != nil {
		return err
	}
	if *yes && *shown != "" {
		return usagef("give --yes or --fingerprint, not both")
	}
	want := ""
	if *shown != "" {
		if want, err = engine.ParseFingerprint(*shown); err != nil {
			return usagef("--fingerprint wants 32 hex digits, as shown in groups of four")
		}
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	if want == "" {
		key, err := p.Client.RelayIdentity(ctx, peer)
		if err != nil {
			return err
		}
		want = key.Fingerprint()
		if !*yes {
			n := engine.SafetyNumber(p.Client.Self(), p.Client.Identity(), peer, key)
			printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"fingerprint", want}, {"safety_number", n}, {"basis", string(engine.SafetyDevices)}, {"pinned", false}})
			return fmt.Errorf("not pinned: compare the safety number with %s, then run parley trust --fingerprint %q %s (or --yes)", peer, want, peer)
		}
	}
	key, err := p.Client.AcceptIdentity(ctx, peer, want)
	if err != nil {
		return err
	}
	// Once pinned, the number is the one safety-number prints: from the
	// two accounts when both lists are held, else from the devices.
	view := engine.SafetyNumberView{Basis: engine.SafetyDevices, Number: engine.SafetyNumber(p.Client.Self(), p.Client.Identity(), peer, key)}
	if v, err := p.Client.Safety(ctx, peer); err == nil {
		view = v
	}
	printer{env.stdout, *f.json}.record([]kv{{"peer", peer.String()}, {"fingerprint", key.Fingerprint()}, {"safety_number", view.Number}, {"basis", string(view.Basis)}, {"pinned", true}})
	return nil
}

func cmdPrune(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	older := f.Duration("older-than", 0, "prune finalized records older than this (for example 720h)")
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *older <= 0 {
		return usagef("--older-than is required and must be positive")
	}
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	n, err := p.Client.Prune(ctx, *older)
	if err != nil {
		return err
	}
	printer{env.stdout, *f.json}.record([]kv{{"pruned", n}})
	return nil
}

func cmdContact(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	remove := f.Bool("remove", false, "forget the name of PEER")
	ops, err := f.parse(env, args, 0, 2)
	if err != nil {
		return err
	}
	if *remove && len(ops) != 1 {
		return usagef("--remove takes one PEER and no name")
	}
	if !*remove && len(ops) == 1 {
		return usagef("give PEER a NAME (parley contact NAME PEER), or --remove its name")
	}
	var peer engine.Address
	name := ""
	switch len(ops) {
	case 1:
		if peer, err = parsePeer(ops[0]); err != nil {
			return usagef("%s", err)
		}
	case 2:
		// NAME PEER; PEER NAME is taken too when only the first is an
		// address.
		addr := ops[1]
		name = ops[0]
		if _, err := engine.ParseAddress(addr); err != nil {
			if _, err2 := engine.ParseAddress(name); err2 == nil {
				name, addr = addr, name
			}
		}
		if peer, err = parsePeer(addr); err != nil {
			return usagef("%s", err)
		}
		if err := engine.CheckContactName(name); err != nil {
			return usagef("%s", err)
		}
	}
	f.reader = len(ops) == 0 // listing the names only reads
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	out := printer{env.stdout, *f.json}
	switch {
	case *remove:
		if err := p.Client.SetContact(ctx, peer, ""); err != nil {
			return err
		}
		out.record([]kv{{"peer", peer.String()}, {"name", ""}})
	case len(ops) == 2:
		if err := p.Client.SetContact(ctx, peer, name); err != nil {
			return err
		}
		out.record([]kv{{"peer", peer.String()}, {"name", name}})
	default:
		names, err := p.Client.Contacts(ctx)
		if err != nil {
			return err
		}
		peers := make([]engine.Address, 0, len(names))
		for a := range names {
			peers = append(peers, a)
		}
		sort.Slice(peers, func(i, j int) bool { return peers[i].String() < peers[j].String() })
		for _, a := range peers {
			out.record([]kv{{"peer", a.String()}, {"name", names[a]}})
		}
	}
	return nil
}
