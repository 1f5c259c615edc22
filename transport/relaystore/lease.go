package relaystore

import (
	"sync"
	"time"
)

// Leases is one relay process's table of the rows it leased, per recipient:
// leases are not durable (Store.Lease), so a backend whose rows live
// elsewhere (SQLite, NATS JetStream) keeps them here, in memory. The zero
// value is an empty table; its methods are safe for concurrent use.
type Leases struct {
	mu      sync.Mutex
	m       map[string]map[uint64]Lease // recipient -> row -> lease
	cursors map[string]*leaseCursor     // for Begin and Claim
}

// Lease is what a relay process remembers of a row it leased.
type Lease struct {
	Holder string
	Until  time.Time
	// From and Size are what the row held when it was leased, so that its
	// acknowledgement need not read it again; zero when the backend does
	// not need them.
	From Origin
	Size int
	// Shared names the shared payload the row's head points at, for a
	// backend that keeps payloads apart from the rows (natsstore); empty
	// for a whole envelope.
	Shared string
}

// Take leases rows of recipient's mailbox to holder until until. Under the
// table's lock, so that two connections of one recipient never lease the
// same row, it forgets the leases that ran out at now and calls scan with
// the recipient's live leases (which scan must not change); scan calls take
// for each row it leases, and its error is Take's.
func (t *Leases) Take(recipient, holder string, now, until time.Time,
	scan func(held map[uint64]Lease, take func(row uint64, from Origin, size int)) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := t.m[recipient]
	for row, l := range held {
		if !now.Before(l.Until) {
			delete(held, row)
			t.rewind(recipient)
		}
	}
	take := func(row uint64, from Origin, size int) {
		if held == nil {
			held = make(map[uint64]Lease)
			if t.m == nil {
				t.m = make(map[string]map[uint64]Lease)
			}
			t.m[recipient] = held
		}
		held[row] = Lease{Holder: holder, Until: until, From: from, Size: size}
	}
	return scan(held, take)
}

// Release ends every lease holder has on recipient's mailbox.
func (t *Leases) Release(recipient, holder string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := t.m[recipient]
	for row, l := range held {
		if l.Holder == holder {
			delete(held, row)
			t.rewind(recipient)
		}
	}
	if len(held) == 0 {
		delete(t.m, recipient)
	}
	if len(held) == 0 && t.cursors[recipient] != nil && t.cursors[recipient].after == 0 {
		delete(t.cursors, recipient) // nothing to remember
	}
}

// Leased returns the leases, live or not, of those of rows that recipient's
// mailbox has leased.
func (t *Leases) Leased(recipient string, rows []uint64) map[uint64]Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[uint64]Lease, len(rows))
	for _, row := range rows {
		if l, ok := t.m[recipient][row]; ok {
			out[row] = l
		}
	}
	return out
}

// Forget drops the leases of rows (acknowledged: deleted) of recipient's
// mailbox.
func (t *Leases) Forget(recipient string, rows []uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if held := t.m[recipient]; held != nil {
		for _, row := range rows {
			delete(held, row)
		}
	}
}

// The two-step lease of a backend whose rows are read with round trips
// (NATS): Begin snapshots the live leases, the backend reads candidates
// without holding the table's lock, and Claim takes those still free. A
// cursor per recipient lets the next read start after the rows already
// read: every row at or below it is leased here or gone. Releasing a lease,
// or one running out, moves the cursor back to the start.

// leaseCursor is a recipient's cursor and the generation it belongs to.
type leaseCursor struct {
	after uint64 // every row at or below is leased here or gone
	gen   uint64 // bumped when a lease ends without an acknowledgement
}

// Begin forgets recipient's leases that ran out at now and returns a copy
// of the live ones, the row after which to read, and the generation to
// hand to Claim.
func (t *Leases) Begin(recipient string, now time.Time) (held map[uint64]Lease, after, gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.cursor(recipient)
	live := t.m[recipient]
	held = make(map[uint64]Lease, len(live))
	for row, l := range live {
		if !now.Before(l.Until) {
			delete(live, row)
			cur.after, cur.gen = 0, cur.gen+1
			continue
		}
		held[row] = l
	}
	return held, cur.after, cur.gen
}

// Candidate is a row read for a lease, with what it held.
type Candidate struct {
	Row    uint64
	From   Origin
	Size   int
	Shared string // as Lease.Shared
}

// Claim leases to holder until until those of cands that no live lease
// holds now, and returns them in order. When gen is still the recipient's
// generation, the cursor moves to readTo: every row up to it was read
// and is leased here or gone.
func (t *Leases) Claim(recipient, holder string, now, until time.Time, cands []Candidate, gen, readTo uint64) []Candidate {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := t.m[recipient]
	var out []Candidate
	for _, c := range cands {
		if l, ok := held[c.Row]; ok && now.Before(l.Until) {
			continue
		}
		if held == nil {
			held = make(map[uint64]Lease)
			if t.m == nil {
				t.m = make(map[string]map[uint64]Lease)
			}
			t.m[recipient] = held
		}
		held[c.Row] = Lease{Holder: holder, Until: until, From: c.From, Size: c.Size, Shared: c.Shared}
		out = append(out, c)
	}
	if cur := t.cursor(recipient); cur.gen == gen && readTo > cur.after {
		cur.after = readTo
	}
	return out
}

// cursor returns recipient's cursor, made on first use; callers hold mu.
func (t *Leases) cursor(recipient string) *leaseCursor {
	if t.cursors == nil {
		t.cursors = make(map[string]*leaseCursor)
	}
	c := t.cursors[recipient]
	if c == nil {
		c = &leaseCursor{}
		t.cursors[recipient] = c
	}
	return c
}

// rewind moves recipient's cursor back to the start: a lease ended
// without an acknowledgement. Callers hold mu.
func (t *Leases) rewind(recipient string) {
	if c := t.cursors[recipient]; c != nil {
		c.after, c.gen = 0, c.gen+1
	}
}
