package natsstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/wire"
)

// ErrShards means the cluster's mailboxes are spread over another number of
// shards than the relay was given: every relay on a cluster must use the
// number the first one stored, and nothing is moved between shards.
var ErrShards = errors.New("mailbox shards differ from the cluster's")

// shardsKey holds, in PARLEY_META, how many mailbox shards the cluster has.
const shardsKey = "mailbox-shards"

// shard is one mailbox stream and the subject root of its mailboxes.
//
// With one shard the stream is PARLEY_MAILBOX on parley.mbox.<addr>, the
// names from before shards. With K > 1, shard i is PARLEY_MAILBOX_<i> on
// parley.mbox.s<i>.<addr>: JetStream refuses streams whose subjects
// overlap, and parley.mbox.* matches no subject of those (one token more).
// A recipient's shard is a fixed hash of its address (shardOf), so its
// mailbox and its rows (the stream's sequences) live in one stream, and
// Raft leadership and disk work spread over the cluster with the streams.
type shard struct {
	stream jetstream.Stream
	name   string // the stream's
	root   string // with the trailing dot
}

// shardOf returns the shard that holds recipient's mailbox.
func (s *Store) shardOf(recipient string) shard { return s.shards[s.shardIndex(recipient)] }

// shardIndex returns the index of recipient's shard.
func (s *Store) shardIndex(recipient string) uint16 {
	if len(s.shards) == 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(recipient))
	return uint16(h.Sum32() % uint32(len(s.shards)))
}

// setupShards checks the cluster's number of shards against the relay's
// (storing it when the cluster has none yet) and creates or updates the
// mailbox streams.
func (s *Store) setupShards(ctx context.Context, meta jetstream.KeyValue, replicas int) error {
	if err := s.checkShards(ctx, meta); err != nil {
		return err
	}
	s.shards = s.shards[:0]
	for i := range s.nShards {
		name, root := s.names.mboxStream, s.names.mbox
		if s.nShards > 1 {
			name, root = name+"_"+strconv.Itoa(i), root+"s"+strconv.Itoa(i)+"."
		}
		st, err := s.mailboxStream(ctx, name, root, replicas)
		if err != nil {
			return err
		}
		s.shards = append(s.shards, shard{stream: st, name: name, root: root})
	}
	return nil
}

// checkShards compares the relay's number of shards with the one stored
// in the cluster's metadata. A cluster that has none stored but already
// holds PARLEY_MAILBOX is from before shards: one.
func (s *Store) checkShards(ctx context.Context, meta jetstream.KeyValue) error {
	e, err := meta.Get(ctx, shardsKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		stored := s.nShards
		if _, err := s.js.Stream(ctx, s.names.mboxStream); err == nil {
			stored = 1
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		if _, err := meta.Create(ctx, shardsKey, []byte(strconv.Itoa(stored))); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err = meta.Get(ctx, shardsKey)
	}
	if err != nil {
		return err
	}
	have, err := strconv.Atoi(string(e.Value()))
	if err != nil {
		return fmt.Errorf("%s in the cluster's metadata: %q", shardsKey, e.Value())
	}
	if have != s.nShards {
		return fmt.Errorf("%w: the cluster has %d, this relay was given %d", ErrShards, have, s.nShards)
	}
	return nil
}

// mailboxStream creates or updates one mailbox stream, allowing direct
// gets (a lease's batch read, directget.go). Rows start from the
// wall clock (see relaystore.NewMemory): a cluster whose streams were wiped
// must not reuse row numbers that clients may still acknowledge. FirstSeq
// only counts when the stream is created.
func (s *Store) mailboxStream(ctx context.Context, name, root string, replicas int) (jetstream.Stream, error) {
	cfg := jetstream.StreamConfig{Name: name, Subjects: []string{root + "*"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: replicas,
		MaxMsgsPerSubject: int64(s.limits.MailboxEnvelopes), Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
		MaxMsgSize: int32(wire.MaxEnvelopeSize + 1024), AllowDirect: true}
	st, err := s.js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		cfg.FirstSeq = uint64(time.Now().UnixNano())
		st, err = s.js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = s.js.Stream(ctx, name)
		}
	case err == nil:
		st, err = s.js.UpdateStream(ctx, cfg)
	}
	return st, err
}
