// Package natsstore keeps a relay's registrations, bundles, one-time prekeys
// and mailboxes in a NATS JetStream cluster, so that any number of relay
// processes behind one address serve the same users. It implements
// relaystore.Store and relaystore.Notifier on github.com/nats-io/nats.go and
// imports nothing of the engine or the websocket.
//
// Layout (with Options.Prefix before every name; every name below is created if missing, with the configured
// replication factor; addresses and IPs are hex-encoded in every subject and
// key, since they may hold characters a subject cannot):
//
//	KV PARLEY_REG      addr -> signing key and registering IP
//	KV PARLEY_IPREG    ip -> addresses first registered from it
//	KV PARLEY_BUNDLE   addr -> bundle (without a one-time prekey)
//	KV PARLEY_USAGE    m.addr, s.addr.sender, i.ip, x.addr, y.addr.ip -> envelopes and
//	  bytes held, and each relay's grant of them (grant.go, grantrecord.go)
//	  (with K > 1 usage shards: PARLEY_USAGE_<i>, a key in one, usageshard.go)
//	KV PARLEY_META     relay-id, mailbox-shards, usage-shards
//	stream PARLEY_OTK      subjects parley.otk.<addr>: one message per one-time prekey
//	stream PARLEY_MAILBOX  subjects parley.mbox.<addr>: one message per envelope
//	  (with Options.Shards K > 1: PARLEY_MAILBOX_<i> on parley.mbox.s<i>.<addr>, shard.go);
//	  a message that shares its payload holds the envelope's head (payload.go)
//	stream PARLEY_PAYLOAD  subjects parley.pay.<id>: a payload that several mailboxes share, once
//	stream PARLEY_PAYREF   subjects parley.payref.<id>: which heads point at that payload
//	subjects parley.wake.<addr> (core NATS): signals between relays
//	subject parley.grant.ask (core NATS): a relay asks the others to return
//	  their grants of a count
//
// A mailbox row is its envelope's stream sequence. The mailbox stream
// refuses a message past the mailbox's count (DiscardNewPerSubject) and the
// relay's other quotas are counted in the usage buckets, from which each
// relay takes grants (slices of a count's room, one compare-and-set each)
// that it spends in memory (grant.go, quota.go). Leases of rows live in
// the relay process that took them (relaystore.Leases).
//
// natsstore.go stays one file (over 600 lines) on purpose: the layout above,
// the compare-and-set quota accounting and the mailbox stream are one unit
// that the coming relay issues (blobs, shards) rewrite together; a cut now
// would be undone by them.
package natsstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Headers of the stored messages.
const (
	hdrSender = "Parley-Sender"
	hdrIP     = "Parley-IP"
	hdrEnv    = "Parley-Envelope" // the envelope's ID, hex
	hdrOTK    = "Parley-OTK"
	// hdrStranger is "1" on an envelope charged to the room for strangers.
	hdrStranger = "Parley-Stranger"
	// hdrRow, on a wake-up for mail, is the newest row the waking relay
	// appended to the address's mailbox (lease.go: tails).
	hdrRow = "Parley-Row"
	// hdrFrom, on a wake-up for mail, is the waking relay process's ID
	// (hex), so that it does not wake its own connections twice.
	hdrFrom = "Parley-From"
)

// names are the buckets, streams and subject roots of a store.
type names struct {
	reg, ipreg, bundle, usage, meta, otkStream, mboxStream string
	payStream, payRef, pay, payrefRoot                     string // shared payloads and their records (payload.go)
	lists, listIP                                          string // device lists (devicelist.go)
	accepted, blocked                                      string
	otk, mbox, wake                                        string // subject roots, with the trailing dot
	ask                                                    string // the grants' ask subject
}

func namesFor(prefix string) names {
	return names{
		reg: prefix + "PARLEY_REG", ipreg: prefix + "PARLEY_IPREG", bundle: prefix + "PARLEY_BUNDLE",
		usage: prefix + "PARLEY_USAGE", meta: prefix + "PARLEY_META",
		lists: prefix + "PARLEY_DEVLIST", listIP: prefix + "PARLEY_DEVLISTIP",
		accepted: prefix + "PARLEY_ACCEPTED", blocked: prefix + "PARLEY_BLOCKED",
		otkStream: prefix + "PARLEY_OTK", mboxStream: prefix + "PARLEY_MAILBOX",
		otk: prefix + "parley.otk.", mbox: prefix + "parley.mbox.", wake: prefix + "parley.wake.",
		ask:       prefix + "parley.grant.ask",
		payStream: prefix + "PARLEY_PAYLOAD", payRef: prefix + "PARLEY_PAYREF", pay: prefix + "parley.pay.",
		payrefRoot: prefix + "parley.payref.",
	}
}

// Options configure Open.
type Options struct {
	// Replicas is the replication factor of every stream and bucket (1 or
	// 3 usually): with 3, a cluster loses nothing accepted when one node
	// dies.
	Replicas int
	// Limits are the store's limits (relaystore.Limits).
	Limits relaystore.Limits
	// Timeout bounds each call to the cluster (default 5s).
	Timeout time.Duration
	// Name names the connection in the cluster's monitoring.
	Name string
	// Shards is how many mailbox streams the mailboxes are spread over
	// (0 or 1: one, PARLEY_MAILBOX); see shard.go. Every relay on a cluster
	// must be given the same number: the first stores it, and Open refuses
	// another (ErrShards). A new cluster spreads its usage counts over as
	// many buckets (usageshard.go).
	Shards int
	// Prefix is put before every stream, bucket and subject name, so that
	// several independent stores can share one cluster (tests). Letters,
	// digits and underscores only.
	Prefix string
	// GrantLife is how long a grant of a usage count lives from its last
	// write (DefaultGrantLife); tests shorten it to see a dead relay's
	// grants lapse.
	GrantLife time.Duration
}

// Store is a relaystore.Store on a JetStream cluster.
type Store struct {
	names   names
	nc      *nats.Conn
	js      jetstream.JetStream
	reg     jetstream.KeyValue
	ipreg   jetstream.KeyValue
	bundles jetstream.KeyValue
	lists   jetstream.KeyValue // device lists by user (devicelist.go)
	listIP  jetstream.KeyValue // device lists started per IP
	ledger  *ledger            // this relay's grants of the usage counts (grant.go, usageshard.go)
	otk     jetstream.Stream
	shards  []shard // the mailbox streams (shard.go)
	nShards int
	limits  relaystore.Limits
	timeout time.Duration
	life    time.Duration // of grants
	relayID [32]byte

	accepted  jetstream.KeyValue // accepted peers (peers.go)
	blocked   jetstream.KeyValue // block lists
	relations relationCache      // both, as last read (relation.go)
	stopWatch context.CancelFunc // ends the watch of both

	leases relaystore.Leases // this process's, with what each row held
	direct *directGets       // leases' batch reads (directget.go)
	tails  tails             // the newest row known per mailbox (lease.go)

	totalMu   sync.Mutex
	totalAt   time.Time
	totalUse  relaystore.Usage
	totalKept int64 // bytes kept: heads, whole envelopes, each shared payload once

	payloads jetstream.Stream // shared payloads (payload.go)
	recent   recentPayloads   // the last stored or read here
	payrefs  jetstream.Stream // their records
	sweepMu  sync.Mutex
	sweepAt  uint64 // where the next sweep of the records starts

	regs regCount // for Stats (stats.go)

	// owners caches who owns an address (Registered is on every append):
	// an entry lives ownerTTL, so that a replacement on another relay is
	// seen after at most that.
	ownersMu sync.Mutex
	owners   map[string]owner
}

type owner struct {
	key [32]byte
	at  time.Time
}

const ownerTTL = 5 * time.Second

var (
	_ relaystore.Store    = (*Store)(nil)
	_ relaystore.Notifier = (*Store)(nil)
)

// Open connects to the cluster at urls (comma-separated or several) and
// creates what is missing.
func Open(ctx context.Context, urls []string, o Options) (*Store, error) {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Name == "" {
		o.Name = "parley relay"
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name(o.Name), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("natsstore: connect to %s: %w", strings.Join(urls, ","), err)
	}
	s := &Store{names: namesFor(o.Prefix), nc: nc, limits: o.Limits.WithDefaults(), timeout: o.Timeout,
		owners: make(map[string]owner), nShards: max(o.Shards, 1), life: o.GrantLife}
	if s.direct, err = newDirectGets(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsstore: %w", err)
	}
	// A cluster that is still forming (no meta leader yet, too few peers
	// up for the replicas) refuses for a while: try again until ctx ends.
	// An attempt gets a second at first, doubled after each failure up to
	// the timeout: a request to a leader that just went down is not
	// answered, and waiting the whole timeout for it made a relay restart
	// while a node is down take 5.3 s where the cluster had new leaders
	// within a second or two (BenchmarkRestartNodeDown, docs/relay.md).
	attempt := min(time.Second, o.Timeout)
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		attempt = min(2*attempt, o.Timeout)
		err := s.setup(actx, o.Replicas)
		cancel()
		if err == nil {
			// The watches too wait for a cluster that is still forming.
			err = s.startWatch()
		}
		if err == nil {
			if err = s.ledger.start(); err != nil {
				s.stopWatch()
			}
		}
		if err == nil {
			return s, nil
		}
		if errors.Is(err, ErrShards) {
			nc.Close()
			return nil, fmt.Errorf("natsstore: %w", err)
		}
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, fmt.Errorf("natsstore: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// leaderReads turns off direct gets on a key-value bucket's stream and
// binds the bucket again, so that its reads go to the stream's leader.
// The Go client makes every bucket answer direct gets, which any replica
// serves, a follower too, that may not have applied the newest write yet:
// a relay could then read no device list, or an owner's replaced key,
// right after another relay (or itself) stored the new one, and a
// compare-and-set that starts from such a read fails until the follower
// caught up. The buckets here are read once per connection or per change
// (the owner cache spares the hot path), so the leader's answer costs
// little. Another relay's start turns direct gets on again for a moment;
// a handle bound here keeps reading from the leader whatever the stream
// allows.
func leaderReads(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, err
	}
	if cfg := st.CachedInfo().Config; cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("bucket %s: leader reads: %w", bucket, err)
		}
	}
	return js.KeyValue(ctx, bucket)
}

func (s *Store) setup(ctx context.Context, replicas int) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	s.js = js
	kv := func(name string) (jetstream.KeyValue, error) {
		if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1, Replicas: replicas, Storage: jetstream.FileStorage}); err != nil {
			return nil, err
		}
		return leaderReads(ctx, js, name)
	}
	if s.reg, err = kv(s.names.reg); err != nil {
		return err
	}
	if s.ipreg, err = kv(s.names.ipreg); err != nil {
		return err
	}
	if s.bundles, err = kv(s.names.bundle); err != nil {
		return err
	}
	if s.lists, err = kv(s.names.lists); err != nil {
		return err
	}
	if s.listIP, err = kv(s.names.listIP); err != nil {
		return err
	}
	if err := s.setupPeers(ctx, replicas); err != nil {
		return err
	}
	meta, err := kv(s.names.meta)
	if err != nil {
		return err
	}
	if s.otk, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: s.names.otkStream, Subjects: []string{s.names.otk + "*"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: replicas,
		MaxMsgsPerSubject: int64(s.limits.OneTimePreKeys), Discard: jetstream.DiscardNew, DiscardNewPerSubject: true}); err != nil {
		return err
	}
	if err := s.setupShards(ctx, meta, replicas); err != nil {
		return err
	}
	if err := s.setupPayloads(ctx, replicas); err != nil {
		return err
	}
	// After the mailbox shards: a relay given the wrong number of them
	// creates no usage bucket before it refuses.
	buckets, err := s.setupUsage(ctx, meta, replicas)
	if err != nil {
		return err
	}
	s.ledger = newLedger(js, s.nc, buckets, s.names.ask, s.life, s.timeout)
	var id [32]byte
	rand.Read(id[:])
	if _, err := meta.Create(ctx, "relay-id", id[:]); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	e, err := meta.Get(ctx, "relay-id")
	if err != nil {
		return err
	}
	if len(e.Value()) != 32 {
		return fmt.Errorf("relay id of %d bytes", len(e.Value()))
	}
	copy(s.relayID[:], e.Value())
	return nil
}

// hexKey encodes an address or IP for a subject or key.
func hexKey(s string) string { return hex.EncodeToString([]byte(s)) }

func (s *Store) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, s.timeout)
}

// RelayID implements relaystore.Store: one ID for every relay on the cluster.
func (s *Store) RelayID(context.Context) ([32]byte, error) { return s.relayID, nil }

// Register implements relaystore.Store. Ownership is a compare-and-set
// create of the address's key: the first key wins across relays. A replace
// is three steps (the owner's update, the bundle's deletion, the pool's
// purge); a relay that stops between them leaves the old bundle until the
// new owner publishes its own, which its first connection does.
func (s *Store) Register(ctx context.Context, address string, key [32]byte, replace bool, ip string) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k := hexKey(address)
	e, err := s.reg.Get(ctx, k)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if ip != "" {
			if err := s.countRegistration(ctx, ip); err != nil {
				return false, fmt.Errorf("register %s: %w", address, err)
			}
		}
		if _, err := s.reg.Create(ctx, k, append(key[:], ip...)); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				return s.Register(ctx, address, key, replace, "") // raced: judge again
			}
			return false, fmt.Errorf("register %s: %w", address, err)
		}
		s.cacheOwner(address, key)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("register %s: %w", address, err)
	}
	old := e.Value()
	if len(old) >= 32 && string(old[:32]) == string(key[:]) {
		return false, nil
	}
	if !replace {
		return false, fmt.Errorf("register %s: %w", address, relaystore.ErrAddressTaken)
	}
	if _, err := s.reg.Update(ctx, k, append(key[:], old[32:]...), e.Revision()); err != nil {
		return false, fmt.Errorf("register %s again: %w", address, err)
	}
	s.cacheOwner(address, key)
	if err := s.bundles.Purge(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return true, fmt.Errorf("register %s again: drop the old bundle: %w", address, err)
	}
	if err := s.otk.Purge(ctx, jetstream.WithPurgeSubject(s.names.otk+k)); err != nil {
		return true, fmt.Errorf("register %s again: drop the old one-time prekeys: %w", address, err)
	}
	return true, nil
}

// countRegistration charges a first registration to ip, within its limit.
func (s *Store) countRegistration(ctx context.Context, ip string) error {
	return s.update(ctx, s.ipreg, hexKey(ip), func(v []byte) ([]byte, error) {
		n := 0
		if len(v) == 8 {
			n = int(binary.BigEndian.Uint64(v))
		}
		if n >= s.limits.RegistrationsPerIP {
			return nil, relaystore.ErrRegistrationQuota
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n+1)), nil
	})
}

// usageMarkerTTL is how long the marker of a purged usage count stays.
const usageMarkerTTL = time.Minute

// update applies fn to the value under key with compare-and-set, reading
// again after a conflict. A nil value from fn removes the key.
func (s *Store) update(ctx context.Context, kv jetstream.KeyValue, key string, fn func([]byte) ([]byte, error)) error {
	for attempt := 0; ; attempt++ {
		var old []byte
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			old, rev = e.Value(), e.Revision()
		}
		v, err := fn(old)
		if err != nil {
			return err
		}
		switch {
		case v == nil && rev == 0:
			return nil
		case v == nil:
			err = kv.Purge(ctx, key, jetstream.LastRevision(rev), jetstream.PurgeTTL(usageMarkerTTL))
		case rev == 0:
			_, err = kv.Create(ctx, key, v)
		default:
			_, err = kv.Update(ctx, key, v, rev)
		}
		if err == nil {
			return nil
		}
		if !isConflict(err) {
			return err
		}
		// Lost to another writer: read again after a short, random wait
		// (bounded by ctx), so that writers racing on one key spread out.
		wait := time.Duration(mrand.Int64N(int64(min(attempt+1, 20)) * int64(time.Millisecond)))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%w (after %d conflicts)", ctx.Err(), attempt+1)
		}
	}
}

// isConflict reports a compare-and-set that lost to another writer.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return true
	}
	return errors.Is(err, jetstream.ErrKeyExists)
}

// Registered implements relaystore.Store. An owner found within the last
// ownerTTL is taken from this process's cache.
func (s *Store) Registered(ctx context.Context, address string) ([32]byte, error) {
	s.ownersMu.Lock()
	o, ok := s.owners[address]
	s.ownersMu.Unlock()
	if ok && time.Since(o.at) < ownerTTL {
		return o.key, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var k [32]byte
	e, err := s.reg.Get(ctx, hexKey(address))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return k, fmt.Errorf("%s: %w", address, relaystore.ErrNotRegistered)
	} else if err != nil {
		return k, fmt.Errorf("look up %s: %w", address, err)
	}
	if len(e.Value()) < 32 {
		return k, fmt.Errorf("look up %s: record of %d bytes", address, len(e.Value()))
	}
	copy(k[:], e.Value())
	s.cacheOwner(address, k)
	return k, nil
}

func (s *Store) cacheOwner(address string, key [32]byte) {
	s.ownersMu.Lock()
	defer s.ownersMu.Unlock()
	if len(s.owners) > 100000 {
		clear(s.owners)
	}
	s.owners[address] = owner{key: key, at: time.Now()}
}

// usage keys.
func mailboxKey(r string) string        { return "m." + hexKey(r) }
func senderKey(r, sender string) string { return "s." + hexKey(r) + "." + hexKey(sender) }
func ipKey(ip string) string            { return "i." + hexKey(ip) }

// usageKeys names the counts an envelope is charged to: its mailbox, its
// sender there, its IP, and a stranger's those of strangerKeys after them.
func usageKeys(recipient string, from relaystore.Origin) []string {
	keys := []string{mailboxKey(recipient), senderKey(recipient, from.Address)}
	if from.IP != "" {
		keys = append(keys, ipKey(from.IP))
	}
	return append(keys, strangerKeys(recipient, from)...)
}

// Append implements relaystore.Store. The quotas are spent from this
// relay's grants of the counts (quota.go), then the envelope published;
// a publish that fails gives them back. The mailbox's count itself is
// also the stream's own per-subject limit, which refuses past it whatever
// the counts say.
func (s *Store) Append(ctx context.Context, recipient string, env []byte, copies int, from relaystore.Origin) ([]uint64, error) {
	if copies < 1 {
		return nil, fmt.Errorf("append to %s: %d copies", recipient, copies)
	}
	if _, err := s.Registered(ctx, recipient); err != nil {
		return nil, fmt.Errorf("append to %s: %w", recipient, err)
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	size := int64(len(env)) * int64(copies)
	refund, err := s.spendQuotas(ctx, recipient, from, copies, size)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", recipient, err)
	}
	rows := make([]uint64, 0, copies)
	for range copies {
		ack, err := s.js.PublishMsg(ctx, s.envelopeMsg(recipient, env, from))
		if err != nil {
			if isPerSubjectFull(err) {
				err = relaystore.ErrMailboxFull
			}
			if len(rows) == 0 {
				refund()
			} else {
				s.refundPart(recipient, from, copies-len(rows), int64(len(env))*int64(copies-len(rows)))
			}
			return nil, fmt.Errorf("append to %s: %w", recipient, err)
		}
		rows = append(rows, ack.Sequence)
		s.noteTotal(1, int64(len(env)), int64(len(env)))
		s.tails.note(recipient, ack.Sequence)
	}
	return rows, nil
}

// envelopeMsg is the message that stores env in recipient's mailbox.
func (s *Store) envelopeMsg(recipient string, env []byte, from relaystore.Origin) *nats.Msg {
	msg := &nats.Msg{Subject: s.shardOf(recipient).root + hexKey(recipient), Data: env, Header: nats.Header{}}
	msg.Header.Set(hdrSender, from.Address)
	msg.Header.Set(hdrIP, from.IP)
	msg.Header.Set(hdrEnv, hex.EncodeToString(from.Envelope[:]))
	if from.Stranger {
		msg.Header.Set(hdrStranger, "1")
	}
	return msg
}

// forgetHead lowers the cached totals by the row of recipient's mailbox
// that this relay just deleted, which held l, and takes a head off its
// shared payload's record.
func (s *Store) forgetHead(ctx context.Context, recipient string, row uint64, l relaystore.Lease) {
	if l.Shared == "" {
		s.noteTotal(-1, -int64(l.Size), -int64(l.Size))
		return
	}
	_, size, _ := parsePayloadRef(l.Shared)
	s.noteTotal(-1, -int64(l.Size), -int64(l.Size-size))
	s.unref(ctx, l.Shared, rowRef{shard: s.shardIndex(recipient), row: row})
}

// refundPart gives back what n envelopes of size bytes in all, of an
// append of several copies, spent of their counts.
func (s *Store) refundPart(recipient string, from relaystore.Origin, n int, size int64) {
	for _, k := range usageKeys(recipient, from) {
		s.ledger.refund(k, relaystore.Usage{Envelopes: n, Bytes: size})
	}
}

// isPerSubjectFull reports the stream's refusal of a message past its
// per-subject limit.
func isPerSubjectFull(err error) bool {
	// The server reports it only in words.
	return err != nil && strings.Contains(err.Error(), "maximum messages per subject exceeded")
}

// Release implements relaystore.Store.
func (s *Store) Release(_ context.Context, recipient, holder string) error {
	s.leases.Release(recipient, holder)
	return nil
}

// Ack implements relaystore.Store. A row counts only when it is one of the
// recipient's own, and its deletion succeeded here: a row acknowledged
// through two relays at once lowers the totals once. A head of a shared
// payload also leaves the payload's record (payload.go).
func (s *Store) Ack(ctx context.Context, recipient string, rows []uint64) (out []relaystore.Removed, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	sh := s.shardOf(recipient)
	subj := sh.root + hexKey(recipient)
	known := s.leases.Leased(recipient, rows)
	// What the deleted rows held, summed per usage key and charged once
	// at the end, whatever happens between: those rows are gone.
	held := map[string]relaystore.Usage{}
	defer func() {
		if cerr := s.freeQuotas(ctx, held); cerr != nil && err == nil {
			err = fmt.Errorf("acknowledge rows of %s: count it: %w", recipient, cerr)
		}
	}()
	for _, row := range rows {
		// A row leased here is the recipient's own, and what it holds is
		// known; any other is read first (its subject says whose it is).
		l, ok := known[row]
		if !ok {
			// From the leader: a replica that lags may not have it yet.
			m, found, err := s.leaderGet(ctx, sh.name, subj, row)
			if err != nil {
				return out, fmt.Errorf("acknowledge rows of %s: %w", recipient, err)
			}
			if !found || m.seq != row {
				continue // gone, or another mailbox's
			}
			size, _, ref := stored(m.header, m.data)
			l = relaystore.Lease{Size: size, From: origin(m.header), Shared: ref}
		}
		if err := sh.stream.DeleteMsg(ctx, row); err != nil {
			continue // deleted meanwhile
		}
		s.forgetHead(ctx, recipient, row, l)
		out = append(out, relaystore.Removed{Recipient: recipient, Row: row, Sender: l.From.Address, Envelope: l.From.Envelope})
		for _, k := range usageKeys(recipient, l.From) {
			d := held[k]
			held[k] = relaystore.Usage{Envelopes: d.Envelopes + 1, Bytes: d.Bytes + int64(l.Size)}
		}
	}
	s.leases.Forget(recipient, rows)
	return out, nil
}

// Notify implements relaystore.Notifier over a core NATS subject. A
// wake-up for mail names, in headers, this relay process and the newest
// row it appended to the mailbox, so that a relay whose lease a lagging
// replica answers reads the rest from the leader.
func (s *Store) Notify(_ context.Context, address string, sig relaystore.Signal) error {
	m := &nats.Msg{Subject: s.names.wake + hexKey(address), Data: []byte("m")}
	switch {
	case len(sig.Statuses) > 0 && !sig.Mail:
		m.Data = encodeStatuses(sig.Statuses)
	case !sig.Mail:
		m.Data = binary.BigEndian.AppendUint32([]byte("p"), uint32(max(sig.Pool, 0)))
	default:
		m.Header = nats.Header{hdrFrom: []string{hex.EncodeToString(s.ledger.self[:])}}
		if row := s.tails.get(address); row != 0 {
			m.Header.Set(hdrRow, strconv.FormatUint(row, 10))
		}
	}
	return s.nc.PublishMsg(m)
}

// Watch implements relaystore.Notifier. A wake-up for mail this relay
// process sent is not passed on: the relay woke its connections itself,
// and one more wake-up would make each lease again for nothing.
func (s *Store) Watch(address string, fn func(relaystore.Signal)) (func(), error) {
	self := hex.EncodeToString(s.ledger.self[:])
	sub, err := s.nc.Subscribe(s.names.wake+hexKey(address), func(m *nats.Msg) {
		switch {
		case len(m.Data) == 1 && m.Data[0] == 'm':
			if m.Header.Get(hdrFrom) == self {
				return
			}
			if row, err := strconv.ParseUint(m.Header.Get(hdrRow), 10, 64); err == nil {
				s.tails.note(address, row)
			}
			fn(relaystore.Signal{Mail: true, Pool: -1})
		case len(m.Data) == 5 && m.Data[0] == 'p':
			fn(relaystore.Signal{Pool: int(binary.BigEndian.Uint32(m.Data[1:]))})
		case len(m.Data) > 0 && m.Data[0] == 's':
			if st := decodeStatuses(m.Data); len(st) > 0 {
				fn(relaystore.Signal{Pool: -1, Statuses: st})
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return func() { sub.Unsubscribe() }, nil
}

// Close implements relaystore.Store. It returns this relay's grants
// first, so that the other relays may spend them at once.
func (s *Store) Close() error {
	s.ledger.close()
	if s.stopWatch != nil {
		s.stopWatch()
	}
	s.nc.Close()
	return nil
}
