package tui

import (
	"context"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/inbox"
	"github.com/parley-chat/parley/tui/outbox"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// Client is the part of *engine.Client the interface uses: the panels' read
// models and actions, events and presentation. It is an interface so that
// panels can be tested without a store.
type Client interface {
	conversations.Source
	timeline.Source
	composer.Source
	inbox.Source
	outbox.Source
	Self() engine.Address
	Identity() engine.IdentityKey
	Events() <-chan engine.Event
	ResyncRequired() bool
	MarkPresented(ctx context.Context) error
	SafetyNumber(ctx context.Context, peer engine.Address) (string, error)
	AcceptIdentity(ctx context.Context, peer engine.Address) (engine.IdentityKey, error)
}

var _ Client = (*engine.Client)(nil)

// submitKind tells a relay wrapper what an envelope handed off under a
// context carries. The engine passes the caller's context down to
// Relay.Submit, so the demo's fault layer can drop "the next ACK" exactly,
// although envelopes are opaque.
type submitKind uint8

const (
	kindMessage submitKind = iota
	kindAck
)

type submitKindKey struct{}

func withKind(ctx context.Context, k submitKind) context.Context {
	return context.WithValue(ctx, submitKindKey{}, k)
}

func kindOf(ctx context.Context) submitKind {
	k, _ := ctx.Value(submitKindKey{}).(submitKind)
	return k
}

// tagged wraps a Client so that every call that hands off envelopes says
// what they carry: sends and retries carry messages, finalizations ACKs.
type tagged struct{ Client }

func (t tagged) Send(ctx context.Context, peer engine.Address, body []byte) (wire.LogicalID, error) {
	return t.Client.Send(withKind(ctx, kindMessage), peer, body)
}

func (t tagged) Retry(ctx context.Context, peer engine.Address) ([]wire.LogicalID, error) {
	return t.Client.Retry(withKind(ctx, kindMessage), peer)
}

func (t tagged) FinalizeBatch(ctx context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error) {
	return t.Client.FinalizeBatch(withKind(ctx, kindAck), reqs)
}
