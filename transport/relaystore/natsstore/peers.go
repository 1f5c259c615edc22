package natsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// The room for strangers in each mailbox, and the peers each owner accepts
// and the senders it blocks (relaystore/peers.go), on the cluster. Each
// owner's accepted peers are one value of the PARLEY_PEERS bucket ("a."
// and the owner), its block list another ("b."), both updated by
// compare-and-set, so that every relay sees the same lists.

// strangerKeys names the counts a stranger's envelope is also charged to:
// the mailbox's room for strangers and, when the IP is known, the IP's
// share of it.
func strangerKeys(recipient string, from relaystore.Origin) []string {
	if !from.Stranger {
		return nil
	}
	keys := []string{"x." + hexKey(recipient)}
	if from.IP != "" {
		keys = append(keys, "y."+hexKey(recipient)+"."+hexKey(from.IP))
	}
	return keys
}

// strangerQuota checks the stranger limits of an append (nil for a peer
// the recipient accepts). Like the other quotas it is read, then charged:
// appends racing through several relays may pass it by what they carry.
func (s *Store) strangerQuota(ctx context.Context, recipient string, from relaystore.Origin, copies int, size int64) error {
	keys := strangerKeys(recipient, from)
	if len(keys) == 0 {
		return nil
	}
	var u [2]relaystore.Usage
	for i, k := range keys {
		var err error
		if u[i], err = s.readUsage(ctx, k); err != nil {
			return err
		}
	}
	return s.limits.StrangerError(u[0], u[1], from, copies, size)
}

func acceptedKey(owner string) string { return "a." + hexKey(owner) }
func blockedKey(owner string) string  { return "b." + hexKey(owner) }

// Accept implements relaystore.Store.
func (s *Store) Accept(ctx context.Context, owner, peer string, now time.Time) (int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var forgot int
	err := s.update(ctx, s.peers, acceptedKey(owner), func(old []byte) ([]byte, error) {
		var l relaystore.PeerList
		l, forgot = decodePeers(old).Record(peer, now, s.limits.AcceptedPeers)
		return encodePeers(l), nil
	})
	if err != nil {
		return 0, fmt.Errorf("record that %s accepts %s: %w", owner, peer, err)
	}
	return forgot, nil
}

// Block implements relaystore.Store.
func (s *Store) Block(ctx context.Context, owner, sender string, blocked bool) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err := s.update(ctx, s.peers, blockedKey(owner), func(old []byte) ([]byte, error) {
		l, err := decodePeers(old).SetBlocked(sender, blocked, time.Now(), s.limits.BlockedSenders)
		if err != nil {
			return nil, err
		}
		return encodePeers(l), nil
	})
	if err != nil {
		return fmt.Errorf("block %s for %s: %w", sender, owner, err)
	}
	return nil
}

// Relation implements relaystore.Store.
func (s *Store) Relation(ctx context.Context, owner, sender string) (relaystore.Relation, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var r relaystore.Relation
	for _, q := range []struct {
		key string
		out *bool
	}{{acceptedKey(owner), &r.Accepted}, {blockedKey(owner), &r.Blocked}} {
		e, err := s.peers.Get(ctx, q.key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return relaystore.Relation{}, fmt.Errorf("relation of %s to %s: %w", owner, sender, err)
		default:
			*q.out = decodePeers(e.Value()).Has(sender)
		}
	}
	return r, nil
}

// encodePeers lays l out as, for each peer, its time (Unix nanoseconds,
// 8 bytes), its address's length (1 byte) and the address; an empty list
// is nil, which removes the key.
func encodePeers(l relaystore.PeerList) []byte {
	if len(l) == 0 {
		return nil
	}
	var b []byte
	for _, p := range l {
		b = binary.BigEndian.AppendUint64(b, uint64(p.Seen.UnixNano()))
		b = append(b, byte(len(p.Address)))
		b = append(b, p.Address...)
	}
	return b
}

// decodePeers reads what encodePeers wrote, stopping at the first entry
// that does not fit.
func decodePeers(b []byte) relaystore.PeerList {
	var l relaystore.PeerList
	for len(b) >= 9 {
		n := int(b[8])
		if len(b) < 9+n {
			break
		}
		l = append(l, relaystore.Peer{Address: string(b[9 : 9+n]), Seen: time.Unix(0, int64(binary.BigEndian.Uint64(b)))})
		b = b[9+n:]
	}
	return l
}
