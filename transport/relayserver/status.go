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
	if !s.cfg.withoutSubmitBatch {
		f |= wire.FeatureSubmitBatch
	}
	if !s.cfg.NoSubmitMulti {
		f |= wire.FeatureSubmitMulti
	}
	if s.cfg.DeviceLists {
		f |= wire.FeatureDeviceLists | wire.FeatureProvisioning | wire.FeatureDeviceListCheck
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
// with no live connection hears nothing. Only senders the recipient accepts
// and does not block hear anything (toldOf).
func (s *Server) tellStatus(ctx context.Context, removed []relaystore.Removed, state wire.EnvelopeState) {
	bySender := make(map[string][]relaystore.StatusNotice)
	var order []string
	told := s.toldOf(ctx)
	for _, r := range removed {
		if r.Sender == "" || r.Envelope == (wire.EnvelopeID{}) {
			continue // kept by an older version: nothing to tell it by
		}
		if !told(r.Recipient, r.Sender) {
			continue
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

// toldOf returns the rule of who hears what became of an envelope: its
// sender, if the recipient accepts it (wrote to it within the accepted
// lifetime) and does not block it, or is the sender itself. Anyone else
// would learn from a status what the recipient does: a stranger that its
// request was taken (the recipient's device is online and reading), a
// blocked sender that it was blocked (its envelopes, discarded, would never
// be taken nor expire while a fresh address's were). So a stranger hears
// nothing, neither taken nor expired (an expiry alone would tell it, by its
// absence, that the others were taken), and a blocked sender hears what a
// stranger hears. Such a sender's retries follow the timer for envelopes
// never reported (an hour, doubling to a day), well inside the envelope
// lifetime. The answers are kept for the call's pairs; a store error
// tells nothing.
func (s *Server) toldOf(ctx context.Context) func(recipient, sender string) bool {
	known := make(map[[2]string]bool)
	now := s.now()
	return func(recipient, sender string) bool {
		if recipient == sender {
			return true
		}
		k := [2]string{recipient, sender}
		if ok, seen := known[k]; seen {
			return ok
		}
		rel, err := s.store.Relation(ctx, recipient, sender, now)
		if err != nil {
			s.log.Error("relation", "err", cause(err))
		}
		ok := err == nil && rel.Accepted && !rel.Blocked
		known[k] = ok
		return ok
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
