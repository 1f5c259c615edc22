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
	mu sync.Mutex
	m  map[string]map[uint64]Lease // recipient -> row -> lease
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
		}
	}
	if len(held) == 0 {
		delete(t.m, recipient)
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
