// Package sent tracks what the engine reported about the hand-off of sent
// messages that are still pending: accepted by the relay, or not sent. The
// store keeps only "pending" and "acknowledged"; relay acceptance is an event,
// so the panels remember it here until the ACK arrives.
package sent

import (
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// State is what is known of a pending sent message's last hand-off.
type State uint8

// States.
const (
	// Pending: stored, no hand-off reported in this run.
	Pending State = iota
	// Accepted: the relay accepted the envelope (not yet acknowledged).
	Accepted
	// NotSent: the last hand-off failed; a retry sends it.
	NotSent
	// OnDevice: the relay reported the envelope taken by the recipient's
	// device (not yet acknowledged).
	OnDevice
)

// String is the word the panels show (greppable on the screen).
func (s State) String() string {
	switch s {
	case Accepted:
		return "relay accepted"
	case NotSent:
		return "not sent"
	case OnDevice:
		return "on the device"
	}
	return "pending"
}

// States remembers the last hand-off of each pending sent message.
type States struct {
	m     map[wire.LogicalID]State
	cause map[wire.LogicalID]string
}

// New returns an empty tracker.
func New() States {
	return States{m: map[wire.LogicalID]State{}, cause: map[wire.LogicalID]string{}}
}

// Apply notes what an event says; it reports whether it changed anything.
func (s States) Apply(e engine.Event) bool {
	switch e.Kind {
	case engine.EventSent:
		s.m[e.ID] = Accepted
		delete(s.cause, e.ID)
	case engine.EventNotSent:
		s.m[e.ID] = NotSent
		if e.Err != nil {
			s.cause[e.ID] = e.Err.Error()
		}
	case engine.EventTaken:
		s.m[e.ID] = OnDevice
		delete(s.cause, e.ID)
	case engine.EventAbandoned:
		delete(s.m, e.ID)
		delete(s.cause, e.ID)
	case engine.EventReceived:
		if e.Result == nil || e.Result.Kind != engine.ResultAcknowledgement {
			return false
		}
		delete(s.m, e.Result.ID)
		delete(s.cause, e.Result.ID)
	default:
		return false
	}
	return true
}

// Get returns a message's state and, when not sent, the cause.
func (s States) Get(id wire.LogicalID) (State, string) {
	return s.m[id], s.cause[id]
}
