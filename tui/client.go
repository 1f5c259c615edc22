package tui

import (
	"context"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/inbox"
	"github.com/parley-chat/parley/tui/outbox"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// PaneSource is what a pane asks of a profile: the part of *engine.Client
// the panels read and act on, its events and their presentation. It is an
// interface so that panes can be tested without a store.
type PaneSource interface {
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
	Safety(ctx context.Context, peer engine.Address) (engine.SafetyNumberView, error)
	AcceptIdentity(ctx context.Context, peer engine.Address, fingerprint string) (engine.IdentityKey, error)
	RelayIdentity(ctx context.Context, peer engine.Address) (engine.IdentityKey, error)
	Policy() engine.Policy
	Contacts(ctx context.Context) (map[engine.Address]string, error)
	Trace(ctx context.Context, peer engine.Address, id wire.LogicalID, dir engine.Direction) (engine.Trace, error)
	SetContact(ctx context.Context, peer engine.Address, name string) error
	UnfinishedImportProgress(ctx context.Context) (engine.ImportProgress, bool, error)
}

var _ PaneSource = (*engine.Client)(nil)

// Attachment is one open client of a profile as a pane sees it. Run makes
// one for its profile; a wrapper that opens and closes profiles (the demo)
// makes one for each client it opens and hands it to AddPane or Attach.
type Attachment struct {
	// Client is the profile's open client.
	Client PaneSource
	// Events are the client's engine events (usually Client.Events()).
	Events <-chan engine.Event
	// Notes are entries for the pane's event log from outside the
	// engine (the demo's fault relay); nil when there are none.
	Notes <-chan eventlog.Entry
	// Done is closed when the client is closed: the pane stops listening.
	Done <-chan struct{}
	// State reports the relay connection in words ("connected",
	// "connecting", "offline") for the status bar; nil is "unknown".
	State func() string
}
