package transport

import (
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// RefusedError is the relay's refusal of an envelope: nothing was stored.
type RefusedError struct {
	EnvelopeID wire.EnvelopeID
	Reason     wire.RefuseReason
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("relay refused envelope %x: %s", e.EnvelopeID[:4], e.Reason)
}

// ServerError is an Error reply of the relay. Its message is meant for a
// person, for example "bob/1 is registered to another identity".
type ServerError struct {
	Code    wire.ErrorCode
	Message string
}

func (e *ServerError) Error() string {
	if e.Message == "" {
		return "relay: " + e.Code.String()
	}
	return e.Message
}

var (
	// ErrNotConnected means the client has no authenticated connection at
	// the moment (it is reconnecting); nothing was sent.
	ErrNotConnected = errors.New("not connected to the relay")
	// ErrConnectionLost means the connection dropped while a request was
	// outstanding: the relay may or may not have acted on it.
	ErrConnectionLost = errors.New("connection to the relay lost")
	// ErrRelayChanged means the relay presented another relay ID than the
	// one the client was configured to trust.
	ErrRelayChanged = errors.New("relay ID differs from the pinned one")
)
