package natsstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// The room for strangers in each mailbox, and the peers each owner accepts
// and the senders it blocks (relaystore/peers.go), on the cluster. Each
// owner's accepted peers are one value of the PARLEY_ACCEPTED bucket, its
// block list one of PARLEY_BLOCKED, both updated by compare-and-set, so
// that every relay sees the same lists. PARLEY_ACCEPTED's values expire
// after the accepted lifetime (the bucket's TTL): an owner that records
// nothing for that long loses its list at once, and within a list that is
// still written, the entries past the lifetime are ignored when read and
// dropped at the next write.

// setupPeers creates the two buckets.
func (s *Store) setupPeers(ctx context.Context, replicas int) error {
	var err error
	if s.accepted, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: s.names.accepted, History: 1, Replicas: replicas,
		Storage: jetstream.FileStorage, TTL: s.limits.AcceptedLifetime}); err != nil {
		return err
	}
	// An emptied block list is purged with a marker that expires (update),
	// which the bucket must allow, or unblocking the last sender fails.
	// A block holds on every relay from the moment it is stored: its
	// reads go to the leader (leaderReads).
	if _, err = s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: s.names.blocked, History: 1, Replicas: replicas,
		Storage: jetstream.FileStorage, LimitMarkerTTL: usageMarkerTTL}); err != nil {
		return err
	}
	s.blocked, err = leaderReads(ctx, s.js, s.names.blocked)
	return err
}

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

func ownerKey(owner string) string { return hexKey(owner) }

// Accept implements relaystore.Store.
func (s *Store) Accept(ctx context.Context, owner, peer string, now time.Time) (int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var forgot int
	err := s.update(ctx, s.accepted, ownerKey(owner), func(old []byte) ([]byte, error) {
		l, _ := decodePeers(old).Forget(now.Add(-s.limits.AcceptedLifetime))
		l, forgot = l.Record(peer, now, s.limits.AcceptedPeers)
		return encodePeers(l), nil
	})
	s.relations.drop(ownerKey(owner))
	if err != nil {
		return 0, fmt.Errorf("record that %s accepts %s: %w", owner, peer, err)
	}
	return forgot, nil
}

// Block implements relaystore.Store.
func (s *Store) Block(ctx context.Context, owner, sender string, blocked bool) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err := s.update(ctx, s.blocked, ownerKey(owner), func(old []byte) ([]byte, error) {
		l, err := decodePeers(old).SetBlocked(sender, blocked, time.Now(), s.limits.BlockedSenders)
		if err != nil {
			return nil, err
		}
		return encodePeers(l), nil
	})
	s.relations.drop(ownerKey(owner))
	if err != nil {
		return fmt.Errorf("block %s for %s: %w", sender, owner, err)
	}
	return nil
}

// ForgetAccepted implements relaystore.Store: the bucket's TTL and the
// pruning at each write forget on their own, so there is nothing to sweep.
func (s *Store) ForgetAccepted(context.Context, time.Time) (int, error) { return 0, nil }

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
