// Package tracetext draws a message's trace (what engine.Trace says of it at
// one end or both) as the text that parley trace prints and the chat's trace
// view shows, so that the command line has it without the chat. It imports
// engine and the shared text layout (internal/layout), nothing of the chat.
package tracetext

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
)

// Draw draws a message's trace (its engine.Trace at each end known) as
// a small diagram: the envelopes that carried it (on which session
// initiation), where it stands at each end, and the ACK. own is what the device showing it knows; peer, when known
// (the demo holds both profiles), is the other end's view of the same
// message. self is the device showing it.
func Draw(self engine.Address, own engine.Trace, peer *engine.Trace) string {
	from, to := self, own.Peer
	if own.Direction == engine.DirectionIn {
		from, to = own.Peer, self
	}
	var b strings.Builder
	id := hex.EncodeToString(own.ID[:])
	fmt.Fprintf(&b, "M %s… %s → %s", id[:8], from, to)
	if len(own.Body) > 0 {
		fmt.Fprintf(&b, " %s", layout.Quote(layout.Clean(own.Body)))
	}
	b.WriteString("\n")
	if own.Imported != nil {
		b.WriteString(" " + ImportedLine(*own.Imported) + "\n")
	}
	sent := own
	if own.Direction == engine.DirectionIn {
		if peer == nil {
			fmt.Fprintf(&b, " at %s (the sender): not known here\n", from)
			sent = engine.Trace{}
		} else {
			sent = *peer
		}
	}
	last := engine.InitiationID{}
	if n := len(sent.Attempts); n > 0 {
		last = sent.Attempts[n-1].Initiation
	}
	for i, a := range sent.Attempts {
		branch := "├─"
		if i == len(sent.Attempts)-1 {
			branch = "└─"
		}
		kind := "ratchet"
		if a.Type.String() != "" {
			kind = strings.ToLower(a.Type.String())
		}
		note := ""
		if a.Initiation != last {
			note = " (a session since replaced: a collision or a reset)"
		}
		if !a.TakenAt.IsZero() {
			note += " · taken " + layout.Clock(a.TakenAt)
		}
		fmt.Fprintf(&b, " %s envelope %s %s on initiation %s · %s%s\n", branch,
			hex.EncodeToString(a.Envelope[:4]), kind, hex.EncodeToString(a.Initiation[:4]), layout.Clock(a.At), note)
	}
	if own.Direction == engine.DirectionOut && len(sent.Attempts) == 0 && own.Imported == nil {
		b.WriteString(" no envelope logged (sent before the log, or pruned)\n")
	}
	// The receiving end.
	recv := peer
	if own.Direction == engine.DirectionIn {
		recv = &own
	}
	switch {
	case recv == nil:
		fmt.Fprintf(&b, " at %s: not known here\n", to)
	case recv.State == "unknown" && sent.State == "acknowledged":
		// Its ACK came back, so it was committed or discarded there; a
		// store that no longer knows it was replaced (a reinstall) or
		// pruned since.
		fmt.Fprintf(&b, " at %s: unknown (reinstalled, or pruned: its ACK says it was finalized)\n", to)
	default:
		line := " at " + to.String() + ": " + recvState(*recv)
		if recv.State == "committed" || recv.State == "discarded" {
			line += " ─▶ ACK"
		}
		b.WriteString(line + "\n")
	}
	// The sending end.
	if own.Direction == engine.DirectionOut || peer != nil {
		switch sent.State {
		case "acknowledged":
			fmt.Fprintf(&b, " at %s: ACK received ─▶ cleared (acknowledged)\n", from)
		case "pending":
			fmt.Fprintf(&b, " at %s: pending until %s's ACK (relay accepted is not delivered)\n", from, to)
		case "on_device":
			fmt.Fprintf(&b, " at %s: on %s's device, pending until its ACK (the relay saw it taken)\n", from, to)
		case "abandoned":
			fmt.Fprintf(&b, " at %s: abandoned (removed here; not a recall)\n", from)
		default:
			fmt.Fprintf(&b, " at %s: not found (pruned, or not sent from here)\n", from)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func recvState(l engine.Trace) string {
	switch l.State {
	case "pending":
		return "delivered, pending a decision (commit or discard)"
	case "committed", "discarded":
		s := "delivered ─▶ " + l.State
		if !l.Done.IsZero() {
			s += " " + layout.Clock(l.Done)
		}
		return s
	}
	return "not delivered yet"
}

// ImportedLine says where a message that came by import came from: a
// linked device's history or a restored backup, and when the import
// started (the moment this device's profile was made).
func ImportedLine(imp engine.Imported) string {
	from := "imported from a restored backup"
	if imp.Link {
		from = "imported with the account's history when this device was linked"
	}
	if !imp.At.IsZero() {
		from += " (" + imp.At.Format("2006-01-02 15:04") + ")"
	}
	return from + ": it came to this device in an archive, not over a session"
}
