package relayserver

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// encode encodes a message the relay built itself.
func encode(req uint32, m wire.RelayMessage) []byte {
	b, err := wire.EncodeRelay(req, m)
	if err != nil {
		panic(fmt.Sprintf("relayserver: encode %s: %v", m.RelayKind(), err))
	}
	return b
}

// errorMsg encodes an Error reply, its message escaped (the wire refuses
// control characters) and cut to the limit.
func errorMsg(req uint32, code wire.ErrorCode, msg string) []byte {
	msg = wire.EscapeControls(msg)
	if len(msg) > wire.MaxErrorMessageSize {
		msg = msg[:wire.MaxErrorMessageSize]
	}
	b, err := wire.EncodeRelay(req, wire.Error{Code: code, Message: msg})
	if err != nil { // a cut through a multi-byte character
		b = encode(req, wire.Error{Code: code})
	}
	return b
}

// peek reads the kind and request ID of a message without decoding it.
func peek(b []byte) (wire.RelayKind, uint32) {
	if len(b) < 6 {
		return 0, 0
	}
	return wire.RelayKind(b[1]), binary.BigEndian.Uint32(b[2:6])
}

// peekEnvelopeID reads the envelope ID of a Submit without decoding it:
// header (6), envelope length (4), envelope version and type (2), ID (16).
func peekEnvelopeID(b []byte) wire.EnvelopeID {
	if len(b) < 10 {
		return wire.EnvelopeID{}
	}
	return envelopeID(b[10:])
}

// envelopeID reads the ID of an encoded envelope, zero when it is too short.
func envelopeID(env []byte) wire.EnvelopeID {
	var id wire.EnvelopeID
	if len(env) >= 18 {
		copy(id[:], env[2:18])
	}
	return id
}
