package natsstore

import (
	"context"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Quota grants (the "quota leases"; "lease" here means a mailbox
// row leased to a connection, so the quota's slices are grants).
//
// This file is over 600 lines on purpose: spend, free, refund, write and
// tend are one protocol around one count's single writer (count.writing),
// and read apart they would hide the order that keeps a limit exact.
//
// Every envelope is charged to three to five counts in the usage buckets
// (its mailbox, its sender there, its IP, and a stranger's room and IP
// share) and every acknowledgement or expiry lowers them. Written each
// time, that was six replicated compare-and-set writes per envelope. A
// relay instead takes a grant: a slice of a count's room (a 64th of the
// limit, and what the envelope at hand needs), written into the count's
// record with one compare-and-set, and spends it in memory. Freeing an
// envelope this relay spent from its grant gives the room back to the
// grant, in memory too. So a busy count costs a write every slice of
// envelopes, and a conversation whose envelopes are acknowledged as they
// arrive costs none.
//
// A count's record holds what is counted outside grants (held) and every
// relay's grant, each with its expiry (grantrecord.go). The limit is
// checked when a grant is written: held plus every live grant plus the new
// one must fit. A relay spends only while its net spending (what it spent
// less what it freed of that) fits its grant, so the envelopes held never
// pass the limit. What a relay holds unspent (at most a slice and one
// envelope per count) is room the others cannot use: a relay whose grant
// does not fit asks the others to return theirs (a core NATS message on
// the ask subject), reads the record again for a few milliseconds, and
// only then refuses. So a refusal is exact but for the grants of relays
// that do not answer, which lapse at their expiry.
//
// A grant is written again (its expiry pushed back) while it is in use,
// returned (its net spending moved into held) once it has been unused for
// a while, when another relay asks, and when the store closes. A relay that
// dies keeps its grant until it expires; another relay then drops it from
// the record, and with it the dead relay's net spending: those envelopes
// are counted no more, at most a slice and one envelope per count, until
// they leave (a count never goes below zero). That is the bound that
// replaces "a relay that dies between the publish and the charge leaves the
// count short by that envelope". Frees beyond this relay's net spending are
// written at once (they lower held), so a relay that dies never leaves a
// count high.

// grantTiming is how long grants live and how their holder tends them.
type grantTiming struct {
	life   time.Duration // from the grant's last write
	margin time.Duration // the holder stops spending this long before the end
	skew   time.Duration // others drop a grant only this long after its end
	idle   time.Duration // a grant unused this long is returned
	tick   time.Duration // how often the holder looks at its grants
}

// DefaultGrantLife is how long a grant lives from its last write: long
// enough that a busy count is written every few seconds at most, short
// enough that a dead relay's grants lapse soon.
const DefaultGrantLife = 10 * time.Second

func timingFor(life time.Duration) grantTiming {
	if life <= 0 {
		life = DefaultGrantLife
	}
	return grantTiming{life: life, margin: life / 10, skew: life / 5, idle: life * 3 / 10, tick: life / 10}
}

const (
	// grantSlices: a grant is a 64th of the limit beyond what the spend
	// at hand needs, so that a busy count is written every few dozen
	// envelopes (a sender's quarter of a mailbox: 39 envelopes a slice).
	grantSlices = 64
	// askPolls is how many times a relay reads a count again after
	// asking the others for their grants, waiting 1, 2, 4, ... ms
	// between (63 ms in all) before it refuses.
	askPolls = 6
	// maxCounts bounds the counts kept in memory: past it the idle ones
	// without a grant are forgotten (which costs a read at their next
	// write).
	maxCounts = 100000
	// tendParallel is how many grants the holder writes at once when it
	// renews or returns them.
	tendParallel = 8
)

// ledger keeps this relay's grants of the usage counts.
type ledger struct {
	buckets []usageBucket
	js      jetstream.JetStream
	nc      *nats.Conn
	askSubj string
	self    [8]byte
	t       grantTiming
	timeout time.Duration

	mu     sync.Mutex
	counts map[string]*count

	closeMu sync.Mutex // held by close
	sub     *nats.Subscription
	stop    chan struct{}
	done    chan struct{}
}

// count is one usage count as this relay knows it.
type count struct {
	granted relaystore.Usage // this relay's grant, as in the record (zero: none)
	net     relaystore.Usage // spent from the grant since it was written, less what was freed of that
	limit   relaystore.Usage // the limit the grant was taken under
	expires time.Time
	used    time.Time // the last spend or free

	known bool // rec and rev are the record as this relay last wrote or read it
	rev   uint64
	rec   grantRecord

	writing bool          // a caller is writing the record
	idle    chan struct{} // closed when that write ends
	freeing relaystore.Usage
	freed   []chan error // the callers whose frees wait for the writer
}

func newLedger(js jetstream.JetStream, nc *nats.Conn, buckets []usageBucket, askSubj string, life, timeout time.Duration) *ledger {
	l := &ledger{buckets: buckets, js: js, nc: nc, askSubj: askSubj, t: timingFor(life), timeout: timeout,
		counts: make(map[string]*count), stop: make(chan struct{}), done: make(chan struct{})}
	rand.Read(l.self[:])
	return l
}

// start listens for the other relays' asks and tends the grants.
func (l *ledger) start() error {
	sub, err := l.nc.Subscribe(l.askSubj, func(m *nats.Msg) {
		if len(m.Data) < len(l.self) || [8]byte(m.Data) == l.self {
			return // this relay's own ask
		}
		key := string(m.Data[len(l.self):])
		l.mu.Lock()
		c := l.counts[key]
		holds := c != nil && c.granted != (relaystore.Usage{})
		l.mu.Unlock()
		if holds {
			go l.tend(key, true)
		}
	})
	if err != nil {
		return err
	}
	l.sub = sub
	go l.run()
	return nil
}

// close stops tending and returns every grant; a second close does
// nothing.
func (l *ledger) close() {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if l.sub == nil {
		return
	}
	l.sub.Unsubscribe()
	l.sub = nil
	close(l.stop)
	<-l.done
	l.mu.Lock()
	var keys []string
	for k, c := range l.counts {
		if c.granted != (relaystore.Usage{}) {
			keys = append(keys, k)
		}
	}
	l.mu.Unlock()
	l.each(keys, func(k string) { l.tend(k, true) })
}

// ask asks the other relays to return their grants of key: the message is
// this relay's ID and the key.
func (l *ledger) ask(key string) {
	l.nc.Publish(l.askSubj, append(l.self[:len(l.self):len(l.self)], key...))
}

// each runs fn on every key, tendParallel at a time.
func (l *ledger) each(keys []string, fn func(string)) {
	sem := make(chan struct{}, tendParallel)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(k)
		}()
	}
	wg.Wait()
}

func (l *ledger) bucket(key string) usageBucket {
	return l.buckets[usageShardOf(key, len(l.buckets))]
}

// count returns key's state, made if missing; the caller holds mu.
func (l *ledger) count(key string) *count {
	c := l.counts[key]
	if c == nil {
		c = &count{}
		l.counts[key] = c
	}
	return c
}

// live reports whether this relay may spend from its grant at now.
func (c *count) live(now time.Time, t grantTiming) bool {
	return c.granted != (relaystore.Usage{}) && now.Before(c.expires.Add(-t.margin))
}

// takeFree frees amt from this relay's net spending, as far as it goes,
// and returns the rest, which must be written; the caller holds mu.
func (c *count) takeFree(amt relaystore.Usage) relaystore.Usage {
	local := least(atLeastZero(c.net), amt)
	c.net = minus(c.net, local)
	return minus(amt, local)
}

// spend charges amt to key within lim: from this relay's grant while it
// has room, otherwise by writing a new grant; full when the count has no
// room for amt even once the other relays were asked for theirs.
func (l *ledger) spend(ctx context.Context, key string, amt, lim relaystore.Usage, full error) error {
	for {
		l.mu.Lock()
		c := l.count(key)
		now := time.Now()
		if !c.writing {
			if c.live(now, l.t) && within(c.limit, lim) && within(plus(c.net, amt), c.granted) {
				c.net = plus(c.net, amt)
				c.used = now
				l.mu.Unlock()
				return nil
			}
			c.used = now
			c.writing, c.idle = true, make(chan struct{})
			l.mu.Unlock()
			err := l.write(ctx, key, c, grantOp{spend: amt, limit: lim, full: full})
			l.release(key, c)
			return err
		}
		w := c.idle
		l.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// freeHere frees what it can of amt from key in memory (from this relay's
// net spending, unless a write of key is under way) and returns the rest,
// which free must write.
func (l *ledger) freeHere(key string, amt relaystore.Usage) relaystore.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.count(key)
	c.used = time.Now()
	if c.writing {
		return amt
	}
	return c.takeFree(amt)
}

// free lowers key by amt (an envelope charged to it left): from this
// relay's net spending as far as it goes, in memory, and the rest written
// before it returns, together with the other frees of key that arrive
// meanwhile.
func (l *ledger) free(ctx context.Context, key string, amt relaystore.Usage) error {
	l.mu.Lock()
	c := l.count(key)
	c.used = time.Now()
	if !c.writing {
		if amt = c.takeFree(amt); amt == (relaystore.Usage{}) {
			l.mu.Unlock()
			return nil
		}
	}
	ch := make(chan error, 1)
	c.freeing = plus(c.freeing, amt)
	c.freed = append(c.freed, ch)
	writer := !c.writing
	if writer {
		c.writing, c.idle = true, make(chan struct{})
	}
	l.mu.Unlock()
	if writer {
		l.release(key, c)
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refund undoes a spend whose envelope was not stored, without waiting:
// the part still in this relay's net spending in memory, the rest (spent
// before the grant was written again) written in the background.
func (l *ledger) refund(key string, amt relaystore.Usage) {
	l.mu.Lock()
	c := l.count(key)
	if !c.writing {
		amt = c.takeFree(amt)
	}
	l.mu.Unlock()
	if amt != (relaystore.Usage{}) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			defer cancel()
			l.free(ctx, key, amt)
		}()
	}
}

// release ends the caller's turn as key's writer: the frees queued
// meanwhile are applied first (written when they go beyond the net
// spending), then the next writer may go.
func (l *ledger) release(key string, c *count) {
	for {
		l.mu.Lock()
		amt, waiters := c.freeing, c.freed
		c.freeing, c.freed = relaystore.Usage{}, nil
		if len(waiters) == 0 {
			c.writing = false
			close(c.idle)
			l.mu.Unlock()
			return
		}
		rest := c.takeFree(amt)
		l.mu.Unlock()
		var err error
		if rest != (relaystore.Usage{}) {
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			err = l.write(ctx, key, c, grantOp{free: rest})
			cancel()
		}
		for _, ch := range waiters {
			ch <- err
		}
	}
}

// grantOp is what one write of a count's record does besides settling.
type grantOp struct {
	spend, limit relaystore.Usage // a spend the grant cannot take: a new grant
	full         error            // the refusal when it does not fit
	free         relaystore.Usage // frees beyond this relay's net spending
	renew        bool             // push the grant's expiry back
	drop         bool             // return the grant
}

// write applies op to key's record with compare-and-set, reading the
// record again after a conflict. The caller is key's writer. A new grant
// (op.spend) or a grant that is no longer live moves this relay's net
// spending into held; a grant of another relay past its expiry and the
// skew is dropped.
func (l *ledger) write(ctx context.Context, key string, c *count, op grantOp) error {
	var zero relaystore.Usage
	asked := 0
	for attempt := 0; ; attempt++ {
		l.mu.Lock()
		known, rev, rec := c.known, c.rev, c.rec
		net, granted, expires, limit := c.net, c.granted, c.expires, c.limit
		l.mu.Unlock()
		if !known {
			var err error
			if rec, rev, err = l.read(ctx, key); err != nil {
				return err
			}
		}
		now := time.Now()
		next := grantRecord{held: minus(rec.held, op.free)}
		var others relaystore.Usage
		for _, g := range rec.grants {
			if g.relay == l.self || now.UnixNano() >= g.expires+int64(l.t.skew) {
				continue
			}
			next.grants = append(next.grants, g)
			others = plus(others, g.amount)
		}
		mine, newNet, newExp, newLimit := granted, net, expires, limit
		if op.spend != zero || op.drop || granted == zero || !now.Before(expires.Add(-l.t.margin)) {
			// Settle: what this relay spent is held now.
			next.held = plus(next.held, net)
			mine, newNet = zero, zero
		} else if op.renew {
			newExp = now.Add(l.t.life)
		}
		if op.spend != zero {
			room := minus(minus(op.limit, next.held), others)
			if !within(op.spend, room) {
				if others == zero || asked >= askPolls {
					return op.full
				}
				if asked == 0 {
					l.ask(key)
				}
				if err := sleepCtx(ctx, time.Duration(1<<asked)*time.Millisecond); err != nil {
					return err
				}
				asked++
				l.forget(c)
				continue
			}
			extra := least(relaystore.Usage{Envelopes: op.limit.Envelopes / grantSlices, Bytes: op.limit.Bytes / grantSlices}, minus(room, op.spend))
			mine, newNet, newExp, newLimit = plus(op.spend, extra), op.spend, now.Add(l.t.life), op.limit
		}
		if mine != zero {
			next.grants = append(next.grants, grantEntry{relay: l.self, amount: mine, expires: newExp.UnixNano()})
		}
		if len(next.grants) == 0 {
			next.held = atLeastZero(next.held)
		}
		newRev, err := l.put(ctx, key, rev, next)
		if err != nil {
			l.forget(c)
			if !isConflict(err) {
				return err
			}
			// Lost to another relay: read again after a short, random
			// wait, so that writers racing on one count spread out.
			if err := sleepCtx(ctx, time.Duration(mrand.Int64N(int64(min(attempt+1, 20))*int64(time.Millisecond)))); err != nil {
				return err
			}
			continue
		}
		l.mu.Lock()
		c.known, c.rev, c.rec = true, newRev, next
		c.granted, c.net, c.expires, c.limit = mine, newNet, newExp, newLimit
		l.mu.Unlock()
		return nil
	}
}

// forget marks c's record unknown: the next write reads it first.
func (l *ledger) forget(c *count) {
	l.mu.Lock()
	c.known = false
	l.mu.Unlock()
}

// read reads key's record and revision (0: no such key).
func (l *ledger) read(ctx context.Context, key string) (grantRecord, uint64, error) {
	e, err := l.bucket(key).kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return grantRecord{}, 0, nil
	} else if err != nil {
		return grantRecord{}, 0, err
	}
	return decodeRecord(e.Value()), e.Revision(), nil
}

// put writes r under key at rev (0: a new key) and returns the new
// revision. A record that counts nothing is purged, and the purge
// marker's revision returned, so that the key's next write is one update.
func (l *ledger) put(ctx context.Context, key string, rev uint64, r grantRecord) (uint64, error) {
	kv := l.bucket(key).kv
	switch {
	case r.empty() && rev == 0:
		return 0, nil
	case r.empty():
		return l.purgeAt(ctx, key, rev)
	case rev == 0:
		return kv.Create(ctx, key, r.encode())
	}
	return kv.Update(ctx, key, r.encode(), rev)
}

// purgeAt purges key at rev, as KeyValue.Purge with LastRevision and
// PurgeTTL does, and returns the marker's revision, which Purge does not:
// with it the next write of the key (a mailbox that fills again) is an
// update at that revision, one request, instead of a read, a create that
// fails on the marker, a read and an update.
func (l *ledger) purgeAt(ctx context.Context, key string, rev uint64) (uint64, error) {
	m := nats.NewMsg(l.bucket(key).subject + key)
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	ack, err := l.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(usageMarkerTTL))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// check reports whether key, with what this relay spent of it, fits lim
// counting every other relay's grant as spent, reading the record at once;
// when it does not and others hold grants, it asks for them and reads
// again, as a spend does. For the rare check that must be exact: an IP
// reaching into the reserve.
func (l *ledger) check(ctx context.Context, key string, lim relaystore.Usage, full error) error {
	for asked := 0; ; asked++ {
		rec, _, err := l.read(ctx, key)
		if err != nil {
			return err
		}
		now := time.Now()
		l.mu.Lock()
		use := plus(rec.held, l.count(key).net)
		l.mu.Unlock()
		var others relaystore.Usage
		for _, g := range rec.grants {
			if g.relay != l.self && now.UnixNano() < g.expires+int64(l.t.skew) {
				others = plus(others, g.amount)
			}
		}
		switch {
		case within(plus(use, others), lim):
			return nil
		case others == (relaystore.Usage{}) || asked >= askPolls:
			return full
		case asked == 0:
			l.ask(key)
		}
		if err := sleepCtx(ctx, time.Duration(1<<asked)*time.Millisecond); err != nil {
			return err
		}
	}
}

// run tends the grants every tick until close.
func (l *ledger) run() {
	defer close(l.done)
	t := time.NewTicker(l.t.tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.tendAll(time.Now())
		}
	}
}

// tendAll returns the grants unused for the idle time, writes again those
// in use past half their life, and forgets counts that hold nothing here.
func (l *ledger) tendAll(now time.Time) {
	var drop, renew []string
	l.mu.Lock()
	for key, c := range l.counts {
		switch {
		case c.writing:
		case c.granted == (relaystore.Usage{}):
			if c.net == (relaystore.Usage{}) && (now.Sub(c.used) >= l.t.life || len(l.counts) > maxCounts) {
				delete(l.counts, key)
			}
		case now.Sub(c.used) >= l.t.idle:
			drop = append(drop, key)
		case c.expires.Sub(now) < l.t.life/2:
			renew = append(renew, key)
		}
	}
	l.mu.Unlock()
	l.each(drop, func(k string) { l.tend(k, true) })
	l.each(renew, func(k string) { l.tend(k, false) })
}

// tend returns key's grant (drop) or pushes its expiry back.
func (l *ledger) tend(key string, drop bool) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	for {
		l.mu.Lock()
		c := l.count(key)
		if c.granted == (relaystore.Usage{}) {
			l.mu.Unlock()
			return
		}
		if !c.writing {
			c.writing, c.idle = true, make(chan struct{})
			l.mu.Unlock()
			l.write(ctx, key, c, grantOp{drop: drop, renew: !drop})
			l.release(key, c)
			return
		}
		w := c.idle
		l.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
