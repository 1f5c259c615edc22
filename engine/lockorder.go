package engine

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// The lock order. A Client has seven mutexes, and a goroutine takes them
// only in this order: while it holds one, it never takes one listed above
// it.
//
//  1. syncMu: one receive round at a time (Sync, SyncUntilIdle).
//  2. pumpMu: one pass of the outbox pump at a time (outbox.go); never held
//     by receive processing.
//  3. sendMu: every envelope the client produces (sends, retries, ACKs,
//     group lanes, recovery requests) and receive processing, which
//     produces ACKs. The pump fetches bundles before it takes sendMu and
//     hands envelopes off after it lets it go; group sends and roster
//     changes hold it only to store their lanes (the pump encrypts them);
//     Send and Retry still hold it across the network. Enqueue, and the
//     holds of device lists (a peer's, this account's), hold it from
//     reading the lists lanes follow to storing, so that a list and the
//     lanes planned with it are ordered (docs/protocol.md, "Lists and
//     sends are ordered").
//  4. loopMu: the loop's policy and schedules (retries, envelopes handed
//     off, maintenance times, the pump's wish).
//  5. mu: the live peer states and the own prekeys.
//  6. recoveryMu: the recovery requests sent lately and the full sending
//     windows.
//  7. eventMu: the presentation markers and the event channel; emit takes
//     it from under any of the others, so it takes none.
//
// rankedMutex carries each mutex's place in the order. Tests switch a
// checker on (export_test.go: CheckLockOrder) that records, per goroutine,
// the mutexes of each client held, and reports every mutex taken while one
// of the same client at its rank or below it is held; TestLockOrder runs
// sends, syncs, commits, retries and prekey refreshes at once with it. When
// the checker is off (always, outside tests), Lock and Unlock cost one
// atomic load more than a sync.Mutex.

// lockRank is a mutex's place in the lock order (1 first).
type lockRank uint8

const (
	rankSync lockRank = iota + 1
	rankPump
	rankSend
	rankLoop
	rankPeers
	rankRecovery
	rankEvent
)

var rankNames = [...]string{rankSync: "syncMu", rankPump: "pumpMu", rankSend: "sendMu", rankLoop: "loopMu", rankPeers: "mu", rankRecovery: "recoveryMu", rankEvent: "eventMu"}

func (r lockRank) String() string {
	if int(r) < len(rankNames) && rankNames[r] != "" {
		return rankNames[r]
	}
	return "rank" + strconv.Itoa(int(r))
}

// rankedMutex is a sync.Mutex with its place in a Client's lock order.
type rankedMutex struct {
	sync.Mutex
	rank  lockRank
	owner *Client
}

// Lock locks m, checking the order first when the checker is on.
func (m *rankedMutex) Lock() {
	if lockOrder.on.Load() {
		lockOrder.acquire(m)
	}
	m.Mutex.Lock()
}

// Unlock unlocks m.
func (m *rankedMutex) Unlock() {
	if lockOrder.on.Load() {
		lockOrder.release(m)
	}
	m.Mutex.Unlock()
}

// rankLocks gives the client's mutexes their places in the order.
func (c *Client) rankLocks() {
	for _, m := range []struct {
		m *rankedMutex
		r lockRank
	}{{&c.syncMu, rankSync}, {&c.pumpMu, rankPump}, {&c.sendMu, rankSend}, {&c.loopMu, rankLoop}, {&c.mu, rankPeers}, {&c.recoveryMu, rankRecovery}, {&c.eventMu, rankEvent}} {
		m.m.rank, m.m.owner = m.r, c
	}
}

// lockChecker is the test-only lock-order checker.
type lockChecker struct {
	on         atomic.Bool
	mu         sync.Mutex
	held       map[uint64][]*rankedMutex // by goroutine
	nested     map[[2]lockRank]bool      // (held, taken) pairs seen
	violations []string
}

var lockOrder lockChecker

func (l *lockChecker) acquire(m *rankedMutex) {
	g := goroutineID()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held, l.nested = make(map[uint64][]*rankedMutex), make(map[[2]lockRank]bool)
	}
	for _, h := range l.held[g] {
		if h.owner != m.owner {
			continue
		}
		l.nested[[2]lockRank{h.rank, m.rank}] = true
		if h.rank >= m.rank {
			buf := make([]byte, 4<<10)
			buf = buf[:runtime.Stack(buf, false)]
			l.violations = append(l.violations, fmt.Sprintf("%s taken while %s is held:\n%s", m.rank, h.rank, buf))
		}
	}
	l.held[g] = append(l.held[g], m)
}

func (l *lockChecker) release(m *rankedMutex) {
	g := goroutineID()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drop(g, m) {
		return
	}
	// Unlocked by another goroutine than the one that locked it.
	for other := range l.held {
		if l.drop(other, m) {
			return
		}
	}
}

func (l *lockChecker) drop(g uint64, m *rankedMutex) bool {
	hs := l.held[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i] == m {
			l.held[g] = append(hs[:i], hs[i+1:]...)
			if len(l.held[g]) == 0 {
				delete(l.held, g)
			}
			return true
		}
	}
	return false
}

// goroutineID is the running goroutine's number, from its stack's header
// ("goroutine 18 [running]:"); only the checker needs it.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}
