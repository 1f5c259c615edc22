package transport

import (
	"fmt"
	"time"
)

// ConnState is where a Conn stands with its relay.
type ConnState uint8

// Connection states.
const (
	// StateConnecting: dialling and authenticating.
	StateConnecting ConnState = iota + 1
	// StateConnected: authenticated; requests go through and deliveries
	// arrive.
	StateConnected
	// StateDisconnected: the last attempt failed or the connection dropped;
	// the client retries after a backoff unless the error is final (the
	// address belongs to another identity, the relay is not the pinned one).
	StateDisconnected
	// StateClosed: Close was called.
	StateClosed
)

// String returns "connecting", "connected", "disconnected" or "closed".
func (s ConnState) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateDisconnected:
		return "disconnected"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("conn state %d", uint8(s))
}

// State is one report of a Conn's state, for a UI.
type State struct {
	Conn ConnState
	// Err is why the connection is not up: the last dial, authentication
	// or connection error (nil when connected or closed).
	Err error
	// Final reports that the client stopped retrying: Err will not go away
	// by waiting.
	Final bool
	// Attempt counts the failed attempts since the last connection.
	Attempt int
	At      time.Time
}
