package natsstore

import (
	"encoding/hex"

	"github.com/nats-io/nats.go"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// What a mailbox message's headers say of its envelope, and the envelope
// statuses carried between relays on the wake subjects.

// origin reads who a mailbox message is charged to, and its envelope's ID
// (zero for a message stored before the header existed, or a bad one).
func origin(h nats.Header) relaystore.Origin {
	o := relaystore.Origin{Address: h.Get(hdrSender), IP: h.Get(hdrIP), Stranger: h.Get(hdrStranger) == "1"}
	if id, err := hex.DecodeString(h.Get(hdrEnv)); err == nil && len(id) == len(o.Envelope) {
		copy(o.Envelope[:], id)
	}
	return o
}

// statusSize is one status on a wake subject: the envelope ID and the state.
const statusSize = 16 + 1

// encodeStatuses lays statuses out as 's' and then, for each, its envelope
// ID and state.
func encodeStatuses(st []relaystore.StatusNotice) []byte {
	b := make([]byte, 1, 1+statusSize*len(st))
	b[0] = 's'
	for _, n := range st {
		b = append(b, n.Envelope[:]...)
		b = append(b, byte(n.State))
	}
	return b
}

// decodeStatuses reads what encodeStatuses wrote; anything else (a cut
// message, from a relay of another version) gives nothing.
func decodeStatuses(b []byte) []relaystore.StatusNotice {
	b = b[1:]
	if len(b) == 0 || len(b)%statusSize != 0 {
		return nil
	}
	out := make([]relaystore.StatusNotice, 0, len(b)/statusSize)
	for ; len(b) > 0; b = b[statusSize:] {
		var n relaystore.StatusNotice
		copy(n.Envelope[:], b)
		n.State = wire.EnvelopeState(b[16])
		out = append(out, n)
	}
	return out
}
