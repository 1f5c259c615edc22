package engine

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/parley-chat/parley/wire"
)

// MaxDraft is the longest draft kept, in bytes: twice the largest body, so
// that a message being cut down to the limit is kept while it is edited.
const MaxDraft = 2 * wire.MaxBodySize

// ErrInvalidDraft means a draft is too long or not UTF-8.
var ErrInvalidDraft = errors.New("invalid draft")

// SetDraft keeps the text being written to Peer, one draft per
// conversation (Text "" forgets it). A draft never leaves the profile and is
// sealed like a message.
type SetDraft struct {
	Peer Address
	Text string
}

func (SetDraft) plan() {}

// Kind implements Plan.
func (SetDraft) Kind() string { return "draft" }

// DraftStore is the read side of drafts, a part of Store.
type DraftStore interface {
	// Drafts returns the draft of each conversation that has one.
	Drafts(ctx context.Context) (map[Address]string, error)
}

// CheckDraft reports why text cannot be kept as a draft.
func CheckDraft(text string) error {
	switch {
	case len(text) > MaxDraft:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidDraft, len(text), MaxDraft)
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidDraft)
	}
	return nil
}

// SaveDraft keeps text as the draft to peer, replacing the one before; ""
// forgets it. It is the composer's text across restarts: sealed in the
// profile, never sent.
func (c *Client) SaveDraft(ctx context.Context, peer Address, text string) error {
	if err := CheckDraft(text); err != nil {
		return err
	}
	if _, err := c.store.Apply(ctx, SetDraft{Peer: peer, Text: text}); err != nil {
		return fmt.Errorf("keep the draft to %s: %w", peer, err)
	}
	return nil
}

// Drafts returns the draft of each conversation that has one.
func (c *Client) Drafts(ctx context.Context) (map[Address]string, error) {
	return c.store.Drafts(ctx)
}
