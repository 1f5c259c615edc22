package transport

import (
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// RefusedError is the relay's refusal of an envelope: nothing was stored.
type RefusedError struct {
	EnvelopeID wire.EnvelopeID
	Reason     wire.RefuseReason
}

// Error names the envelope and the relay's reason.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("relay refused envelope %x: %s", e.EnvelopeID[:4], e.Reason)
}

// ServerError is an Error reply of the relay. Its message is meant for a
// person, for example "bob/1 is registered to another identity".
type ServerError struct {
	Code    wire.ErrorCode
	Message string
}

// Error returns the relay's message, or its code when it sent none. The
// decoder refuses a message with control characters; one built by hand is
// escaped all the same, since this text reaches stderr and the TUI.
func (e *ServerError) Error() string {
	if e.Message == "" {
		return "relay: " + e.Code.String()
	}
	return wire.EscapeControls(e.Message)
}

// Is lets errors.Is match a ServerError against the sentinel of its code:
// ErrAddressTaken.
func (e *ServerError) Is(target error) bool {
	return target == ErrAddressTaken && e.Code == wire.ErrorAddressTaken
}

// notRegistered is the relay's answer that it holds no bundle for peer.
type notRegistered struct {
	peer engine.Address
	err  *ServerError
}

func (e *notRegistered) Error() string {
	return fmt.Sprintf("%s is %v", e.peer, engine.ErrPeerNotRegistered)
}

func (e *notRegistered) Is(target error) bool { return target == engine.ErrPeerNotRegistered }

func (e *notRegistered) Unwrap() error { return e.err }

// ErrAddressTaken matches the relay's refusal of an address that another
// identity registered first.
var ErrAddressTaken = errors.New("address registered to another identity")

var (
	// ErrNotConnected means the client has no authenticated connection at
	// the moment (it is reconnecting); nothing was sent. It matches
	// engine.ErrRelayUnreachable.
	ErrNotConnected error = unreachable{errors.New("not connected to the relay")}
	// ErrConnectionLost means the connection dropped while a request was
	// outstanding: the relay may or may not have acted on it. It matches
	// engine.ErrRelayUnreachable.
	ErrConnectionLost error = unreachable{errors.New("connection to the relay lost")}
	// ErrRelayChanged means the relay presented another relay ID than the
	// one the client was configured to trust.
	ErrRelayChanged = errors.New("relay ID differs from the pinned one")
)

// unreachable marks an error as the relay being out of reach, so that
// callers can test for engine.ErrRelayUnreachable whatever the cause (a
// refused dial, a dropped connection).
type unreachable struct{ err error }

func (u unreachable) Error() string   { return u.err.Error() }
func (u unreachable) Unwrap() []error { return []error{u.err, engine.ErrRelayUnreachable} }
