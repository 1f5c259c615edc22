package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
)

// A history import (a linked device's history, a restored backup) that
// stopped part way leaves the profile holding part of its history until
// the command that made it runs again. The pane reads the import's
// progress once when it starts, and while one is unfinished its status
// bar says how far it went and what finishes it, as the command line
// warns. Nothing imports while the chat holds the profile (the link or
// restore that runs it holds the profile itself), so the progress is not
// read again.

// historyImportMsg carries the progress of the profile's unfinished
// history import; ok is false when there is none.
type historyImportMsg struct {
	prog engine.ImportProgress
	ok   bool
	err  error
}

// readHistoryImport reads the progress of the profile's unfinished
// history import.
func (p pane) readHistoryImport() tea.Cmd {
	if p.att == nil {
		return nil
	}
	c, ctx := p.att.Client, p.ctx
	return func() tea.Msg {
		prog, ok, err := c.UnfinishedImportProgress(ctx)
		return historyImportMsg{prog: prog, ok: ok, err: err}
	}
}

// historyLine is the status bar's line for an unfinished history import:
// how far it went, and the command that finishes it.
func (p pane) historyLine() string {
	h := p.history
	what := "restore"
	if h.Link {
		what = "link"
	}
	pct := uint64(0)
	if h.Total > 0 {
		pct = h.Next * 100 / h.Total
	}
	line := fmt.Sprintf("⚠ history import (%s) stopped at %d of %d records (%d%%)", what, h.Next, h.Total, pct)
	if p.hooks.ImportCommand != nil {
		if cmd := p.hooks.ImportCommand(h.Link); cmd != "" {
			return line + ": run " + cmd + " to finish it"
		}
	}
	return line + ": run the " + what + " again to finish it"
}
