package relayserver

import (
	"context"
	"math"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// What the relay tells a sender of its envelopes (wire.EnvelopeStatus) and
// what it tells every client it supports (wire.Features) and how long it
// keeps an envelope (wire.EnvelopeLifetime).

// features is what this relay announces after AuthOK.
func (s *Server) features() wire.FeatureSet {
	f := wire.FeatureEnvelopeStatus | wire.FeatureSenderBlock
	if s.blobs != nil {
		f |= wire.FeatureBlobs
	}
	if _, ok := s.announcedLifetime(); ok {
		f |= wire.FeatureEnvelopeLifetime
	}
	return f
}

// announcedLifetime is the envelope lifetime the relay announces: whole
// seconds, rounded down so that no expiry it reports comes before it (a
// lifetime under a second, for tests, is not announced).
func (s *Server) announcedLifetime() (wire.EnvelopeLifetime, bool) {
	d := s.lim.EnvelopeLifetime.Truncate(time.Second)
	if d < time.Second {
		return wire.EnvelopeLifetime{}, false
	}
	return wire.EnvelopeLifetime{Lifetime: min(d, math.MaxUint32*time.Second)}, true
}

// tellStatus tells the senders of removed rows, best effort, that their
// envelopes left the mailbox in state: on this relay and, through the
// store's Notifier, on every relay sharing it. Nothing is stored: a sender
// with no live connection hears nothing.
func (s *Server) tellStatus(removed []relaystore.Removed, state wire.EnvelopeState) {
	bySender := make(map[string][]relaystore.StatusNotice)
	var order []string
	for _, r := range removed {
		if r.Sender == "" || r.Envelope == (wire.EnvelopeID{}) {
			continue // kept by an older version: nothing to tell it by
		}
		if bySender[r.Sender] == nil {
			order = append(order, r.Sender)
		}
		bySender[r.Sender] = append(bySender[r.Sender], relaystore.StatusNotice{Envelope: r.Envelope, State: state})
	}
	for _, sender := range order {
		st := bySender[sender]
		s.metrics.statuses.WithLabelValues(state.String()).Add(float64(len(st)))
		// A Notifier hears its own signals: the local connections are
		// told through the relay's own watch, so that none hears twice.
		if n, ok := s.store.(relaystore.Notifier); ok {
			if err := n.Notify(context.Background(), sender, relaystore.Signal{Pool: -1, Statuses: st}); err == nil {
				continue
			} else {
				s.log.Error("signal other relays", "err", cause(err))
			}
		}
		s.tellStatusLocal(sender, st)
	}
}

// tellStatusLocal pushes statuses to address's connections on this relay.
// A connection whose queue is full misses them: they are a hint, and the
// sender's retry timers stand in for a lost one.
func (s *Server) tellStatusLocal(address string, st []relaystore.StatusNotice) {
	msgs := make([][]byte, len(st))
	for i, n := range st {
		msgs[i] = encode(0, wire.EnvelopeStatus{EnvelopeID: n.Envelope, State: n.State})
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for c := range s.byAddr[address] {
		for _, m := range msgs {
			c.push(m)
		}
	}
}
