package engine

import (
	"fmt"
	"time"
)

// Holds. A group frame that names a group or a generation this device has
// not seen yet stays staged, neither acknowledged nor refused, and is opened
// again on every pass over the staging area until its roster arrives
// (FIFO holds per pair only, so a member's message can overtake the admin's
// roster change). A hold costs a pass's work and a staging row, and anyone
// with a session can make one, so holds are bounded per sender
// (MaxHeldPerSender) and in all (MaxHeldGroupFrames): past either bound the
// oldest hold (of that sender, or of all) is dropped to quarantine with
// ErrHeldFull and an event. Its sender gets no answer, so its lane stays
// pending and a later retry brings it again: nothing is lost.

// heldRow is one staged row a pass left held.
type heldRow struct {
	row    int64
	sender Address
}

// holdState counts the holds of one pass over the staging area, in row order
// (oldest first): every held row is met on every pass, so the counts are
// those of the staging area.
type holdState struct {
	order    []heldRow // every row still held, oldest first
	bySender map[Address]int
	dropped  map[int64]bool
}

func newHoldState() *holdState {
	return &holdState{bySender: make(map[Address]int), dropped: make(map[int64]bool)}
}

// clone copies the state, so that a page that fails to commit can be
// prepared again from the counts before it.
func (h *holdState) clone() *holdState {
	c := &holdState{order: append([]heldRow(nil), h.order...), bySender: make(map[Address]int, len(h.bySender)),
		dropped: make(map[int64]bool, len(h.dropped))}
	for k, v := range h.bySender {
		c.bySender[k] = v
	}
	for k, v := range h.dropped {
		c.dropped[k] = v
	}
	return c
}

// add records a held row and returns the rows the bounds now drop: the
// sender's oldest when it holds more than MaxHeldPerSender, then the oldest
// of all while more than MaxHeldGroupFrames are held.
func (h *holdState) add(r heldRow) []heldRow {
	h.order = append(h.order, r)
	h.bySender[r.sender]++
	var out []heldRow
	if h.bySender[r.sender] > MaxHeldPerSender {
		for _, o := range h.order {
			if o.sender == r.sender && !h.dropped[o.row] {
				out = append(out, h.drop(o))
				break
			}
		}
	}
	for len(h.order)-len(h.dropped) > MaxHeldGroupFrames {
		for _, o := range h.order {
			if !h.dropped[o.row] {
				out = append(out, h.drop(o))
				break
			}
		}
	}
	return out
}

func (h *holdState) drop(r heldRow) heldRow {
	h.dropped[r.row] = true
	h.bySender[r.sender]--
	return r
}

// dropHeld is the verdict on a held row the bounds drop.
func dropHeld(r heldRow, now time.Time) prepared {
	err := fmt.Errorf("%s: over %d held frames from one sender or %d in all: %w", r.sender, MaxHeldPerSender, MaxHeldGroupFrames, ErrHeldFull)
	return dropRow(StagedEnvelope{Row: r.row}, now, r.sender, [16]byte{}, err)
}
