package timeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
)

// Matrix is the delivery of one's own group message at a glance: "✓ 3/4"
// when three of four lanes are acknowledged, followed by the first lane
// that is not, with how long the message has waited ("· carol pending
// 2h"), and "+2" when more lanes wait. A lane that ended without an ACK
// (abandoned, removed, not_a_member) counts in the total but is named
// only when no lane is still pending, since pending is what a person can
// act on. name gives the label of a member; nil shows addresses.
func Matrix(lanes []engine.Lane, sent, now time.Time, name func(engine.Address) string) string {
	if len(lanes) == 0 {
		return ""
	}
	if name == nil {
		name = func(a engine.Address) string { return a.String() }
	}
	acked := 0
	var waiting, ended []engine.Lane
	for _, l := range lanes {
		switch {
		case l.State == engine.LaneAcknowledged:
			acked++
		case l.State.Ended():
			ended = append(ended, l)
		default:
			waiting = append(waiting, l)
		}
	}
	var b strings.Builder
	mark := "✓"
	if acked == 0 {
		mark = "…"
	}
	fmt.Fprintf(&b, "%s %d/%d", mark, acked, len(lanes))
	switch {
	case len(waiting) > 0:
		fmt.Fprintf(&b, " · %s %s %s", name(waiting[0].Recipient), waiting[0].State, Age(now.Sub(sent)))
		if len(waiting) > 1 {
			fmt.Fprintf(&b, " +%d", len(waiting)-1)
		}
	case len(ended) > 0:
		fmt.Fprintf(&b, " · %s %s", name(ended[0].Recipient), ended[0].State)
		if len(ended) > 1 {
			fmt.Fprintf(&b, " +%d", len(ended)-1)
		}
	}
	return b.String()
}

// Lanes is the opened matrix: one line per member with its state, in the
// order given.
func Lanes(lanes []engine.Lane, name func(engine.Address) string) []string {
	if name == nil {
		name = func(a engine.Address) string { return a.String() }
	}
	out := make([]string, 0, len(lanes))
	for _, l := range lanes {
		mark := "·"
		switch {
		case l.State == engine.LaneAcknowledged:
			mark = "✓"
		case l.State.Ended():
			mark = "✗"
		}
		out = append(out, fmt.Sprintf("%s %s %s", mark, name(l.Recipient), l.State))
	}
	return out
}

// Age is a wait as a person reads it: seconds under a minute, then the
// largest whole unit (45s, 12m, 2h, 3d).
func Age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
