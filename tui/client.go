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
	RelayIdentity(ctx context.Context, peer engine.Address) (engine.IdentityKey, error)
	Policy() engine.Policy
	Contacts(ctx context.Context) (map[engine.Address]string, error)
	Life(ctx context.Context, peer engine.Address, id wire.LogicalID, dir engine.Direction) (engine.Life, error)
	SetContact(ctx context.Context, peer engine.Address, name string) error
}

var _ Client = (*engine.Client)(nil)
