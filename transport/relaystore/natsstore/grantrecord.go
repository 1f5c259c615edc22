package natsstore

import (
	"encoding/binary"

	"github.com/parley-chat/parley/transport/relaystore"
)

// A count's record, the value of its key in a usage bucket:
//
//	held envelopes  int64, big-endian
//	held bytes      int64
//	then, for each relay holding a grant of the count:
//	  relay    [8] (the relay process's random ID)
//	  envelopes int64, bytes int64: the grant's size
//	  expires  int64: Unix nanoseconds
//
// A record of 16 bytes, the layout from before grants, is held counts and
// no grant, so that a cluster's counts carry over; a relay from before
// grants reads any longer record as zero, so it must not run beside one
// from after (docs/relay.md).

const (
	recordHead = 16
	grantSize  = 32
)

// grantRecord is a count's record, decoded.
type grantRecord struct {
	held   relaystore.Usage // counted outside grants; below zero only while a grant settles it
	grants []grantEntry
}

// grantEntry is one relay's grant of a count.
type grantEntry struct {
	relay   [8]byte
	amount  relaystore.Usage
	expires int64 // Unix nanoseconds
}

// decodeRecord decodes a count's record; a value of another length than
// the layout's is read as an empty count (as the layout from before
// grants read a value it did not know).
func decodeRecord(v []byte) grantRecord {
	var r grantRecord
	if len(v) < recordHead || (len(v)-recordHead)%grantSize != 0 {
		return r
	}
	r.held = relaystore.Usage{Envelopes: int(int64(binary.BigEndian.Uint64(v))), Bytes: int64(binary.BigEndian.Uint64(v[8:]))}
	for g := v[recordHead:]; len(g) >= grantSize; g = g[grantSize:] {
		var e grantEntry
		copy(e.relay[:], g)
		e.amount = relaystore.Usage{Envelopes: int(int64(binary.BigEndian.Uint64(g[8:]))), Bytes: int64(binary.BigEndian.Uint64(g[16:]))}
		e.expires = int64(binary.BigEndian.Uint64(g[24:]))
		r.grants = append(r.grants, e)
	}
	return r
}

// encode is the record's value.
func (r grantRecord) encode() []byte {
	out := make([]byte, 0, recordHead+grantSize*len(r.grants))
	out = binary.BigEndian.AppendUint64(out, uint64(int64(r.held.Envelopes)))
	out = binary.BigEndian.AppendUint64(out, uint64(r.held.Bytes))
	for _, g := range r.grants {
		out = append(out, g.relay[:]...)
		out = binary.BigEndian.AppendUint64(out, uint64(int64(g.amount.Envelopes)))
		out = binary.BigEndian.AppendUint64(out, uint64(g.amount.Bytes))
		out = binary.BigEndian.AppendUint64(out, uint64(g.expires))
	}
	return out
}

// empty reports a record that counts nothing: its key can go.
func (r grantRecord) empty() bool { return r.held == (relaystore.Usage{}) && len(r.grants) == 0 }

// Usage arithmetic, each dimension on its own.

func plus(a, b relaystore.Usage) relaystore.Usage {
	return relaystore.Usage{Envelopes: a.Envelopes + b.Envelopes, Bytes: a.Bytes + b.Bytes}
}

func minus(a, b relaystore.Usage) relaystore.Usage {
	return relaystore.Usage{Envelopes: a.Envelopes - b.Envelopes, Bytes: a.Bytes - b.Bytes}
}

// within reports a <= b in both dimensions.
func within(a, b relaystore.Usage) bool { return a.Envelopes <= b.Envelopes && a.Bytes <= b.Bytes }

func least(a, b relaystore.Usage) relaystore.Usage {
	return relaystore.Usage{Envelopes: min(a.Envelopes, b.Envelopes), Bytes: min(a.Bytes, b.Bytes)}
}

func atLeastZero(a relaystore.Usage) relaystore.Usage {
	return relaystore.Usage{Envelopes: max(a.Envelopes, 0), Bytes: max(a.Bytes, 0)}
}
