package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Short IDs: the TUI shows a logical ID's first 8 hex digits, and trace,
// commit, discard and abandon accept such a prefix (at least minIDPrefix
// digits) as well as the full 32, when exactly one of the messages the
// command could mean starts with it.

// minIDPrefix is the fewest hex digits taken as an ID prefix: fewer match
// too much to be meant.
const minIDPrefix = 4

// idOperand is an ID operand: a full ID, or a prefix to resolve.
type idOperand struct {
	full   *wire.LogicalID
	prefix string
}

// parseIDOperand reads 32 hex digits, or a prefix of minIDPrefix to 31.
func parseIDOperand(s string) (idOperand, error) {
	if len(s) == 2*len(wire.LogicalID{}) {
		id, err := parseID(s)
		return idOperand{full: &id}, err
	}
	if _, err := hex.DecodeString(s + strings.Repeat("0", len(s)%2)); err != nil || len(s) < minIDPrefix || len(s) > 2*len(wire.LogicalID{}) || s != strings.ToLower(s) {
		return idOperand{}, fmt.Errorf("%q is not a message ID (want 32 hex digits, or the first %d or more as shown on screen)", s, minIDPrefix)
	}
	return idOperand{prefix: s}, nil
}

// matches reports whether id is the operand's: the same full ID, or one
// its prefix starts.
func (o idOperand) matches(id wire.LogicalID) bool {
	if o.full != nil {
		return *o.full == id
	}
	return strings.HasPrefix(hexID(id), o.prefix)
}

// idCandidates pages the IDs a command could mean, handing each to yield.
type idCandidates func(ctx context.Context, yield func(wire.LogicalID)) error

// resolve returns the full ID: the operand's own, or the one candidate its
// prefix matches; what names the candidates in the plural. No match, or
// several, is an error (exit 1) in one line saying what was searched and
// how many matched.
func (o idOperand) resolve(ctx context.Context, what string, cands idCandidates) (wire.LogicalID, error) {
	if o.full != nil {
		return *o.full, nil
	}
	seen := map[wire.LogicalID]bool{}
	err := cands(ctx, func(id wire.LogicalID) {
		if o.matches(id) {
			seen[id] = true
		}
	})
	if err != nil {
		return wire.LogicalID{}, err
	}
	switch len(seen) {
	case 0:
		return wire.LogicalID{}, fmt.Errorf("none of the %s has an ID starting with %s", what, o.prefix)
	case 1:
		for id := range seen {
			return id, nil
		}
	}
	return wire.LogicalID{}, fmt.Errorf("%s matches %d of the %s; give more digits", o.prefix, len(seen), what)
}

// pendingInboundIDs are the pending messages received from sender.
func pendingInboundIDs(c *engine.Client, sender engine.Address) idCandidates {
	return func(ctx context.Context, yield func(wire.LogicalID)) error {
		for after := int64(0); ; {
			page, err := c.PendingInbound(ctx, engine.PageQuery{After: after, Limit: 1000, Peer: &sender})
			if err != nil || len(page) == 0 {
				return err
			}
			for _, m := range page {
				yield(m.ID)
			}
			after = page[len(page)-1].Seq
		}
	}
}

// pendingOutboundIDs are the pending messages sent to recipient.
func pendingOutboundIDs(c *engine.Client, recipient engine.Address) idCandidates {
	return func(ctx context.Context, yield func(wire.LogicalID)) error {
		for after := int64(0); ; {
			page, err := c.PendingOutbound(ctx, engine.PageQuery{After: after, Limit: 1000, Peer: &recipient})
			if err != nil || len(page) == 0 {
				return err
			}
			for _, m := range page {
				yield(m.ID)
			}
			after = page[len(page)-1].Seq
		}
	}
}

// conversationIDs are every message to or from peer that trace can show:
// pending both ways, and the history.
func conversationIDs(c *engine.Client, peer engine.Address) idCandidates {
	return func(ctx context.Context, yield func(wire.LogicalID)) error {
		if err := pendingInboundIDs(c, peer)(ctx, yield); err != nil {
			return err
		}
		if err := pendingOutboundIDs(c, peer)(ctx, yield); err != nil {
			return err
		}
		for before := int64(0); ; {
			page, err := c.History(ctx, peer, before, 1000)
			if err != nil || len(page) == 0 {
				return err
			}
			for _, e := range page {
				yield(e.ID)
			}
			before = page[len(page)-1].Seq
		}
	}
}
