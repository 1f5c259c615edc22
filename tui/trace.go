package tui

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/eventlog"
)

// traceEvents adds to a message's trace what the event logs of every profile
// shown said about it, in order: relay acceptances, losses the demo
// caused, deliveries, repeats, commits and ACKs. These are kept in memory
// only (the durable log has the envelopes).
func (m Model) traceEvents(lm traceMsg) traceMsg {
	names := []string{hex.EncodeToString(lm.id[:4])}
	for _, e := range lm.envs {
		names = append(names, "envelope "+hex.EncodeToString(e[:4]))
	}
	mentions := func(text string) bool {
		for _, n := range names {
			if strings.Contains(text, n) {
				return true
			}
		}
		return false
	}
	type seen struct {
		e    eventlog.Entry
		self engine.Address
	}
	var all []seen
	for _, p := range m.panes {
		for _, e := range p.ev().Entries() {
			if e.Name != "trace" && mentions(e.Text) {
				all = append(all, seen{e, p.self})
			}
		}
	}
	if len(all) == 0 {
		return lm
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].e.At.Before(all[j].e.At) })
	var b strings.Builder
	b.WriteString(lm.text + "\n seen in the event logs (this run):")
	for _, s := range all {
		fmt.Fprintf(&b, "\n  %s %s %s %s", layout.Clock(s.e.At), s.self, s.e.Name, s.e.Text)
	}
	lm.text = b.String()
	return lm
}
