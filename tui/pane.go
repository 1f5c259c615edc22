package tui

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/parley-chat/parley/wire"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/tracetext"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/devices"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/inbox"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/trace"
	"github.com/parley-chat/parley/tui/outbox"
	"github.com/parley-chat/parley/tui/requests"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/tui/transfer"
)

// pane is one profile: its panels, its status bar and what it knows of the
// peers. The root model holds one (parley tui) or two (the demo).
type pane struct {
	idx  int
	gen  int
	self engine.Address
	att  *Attachment // nil while the profile is closed
	ctx  context.Context
	th   themes.Theme
	keys paneKeys
	log  *slog.Logger
	now  func() time.Time

	focus  panelID
	active bool
	// panels are the pane's panels, by panelID. They are pointers: copies
	// of a pane share them.
	panels [panelCount]panel

	peer    engine.Address
	group   *wire.GroupID // the group the composer writes to (groupsend.go)
	safety  string
	safeErr string
	// safeBasis is what the safety number shown was computed from.
	safeBasis engine.SafetyBasis
	changed   map[engine.Address]*identityChange

	policy engine.Policy // the client's loop policy, read on each tick

	// fileNames are names for devices from the settings file; the
	// profile's own names win over them.
	fileNames map[engine.Address]string
	// hooks are what a wrapper added to the pane (PaneOptions).
	hooks PaneOptions

	connState string // the relay connection, read on each tick
	blurred   bool   // the terminal reported that it lost the focus
	present   bool   // events drawn since the last MarkPresented
	closed    string
	// holdPresented keeps what the pane drew from being marked presented
	// (Model.HoldPresented).
	holdPresented bool
	// flags are a wrapper's switches shown in the status bar
	// (Model.SetFlags).
	flags []string

	// xfer is the strip of file transfers in flight (files.go), shared by
	// copies of the pane.
	xfer *transfer.Model

	// draft is the text of each conversation, kept across restarts when
	// the client keeps drafts (draft.go).
	draft drafts

	// uploads are the uploads begun and not finished, as last read;
	// sending are the files this pane is uploading now (files.go).
	uploads []engine.Upload
	sending map[string]bool

	// notice is a line for the status bar (an action refused), until
	// the next key.
	notice string

	// history is the profile's history import that stopped part way,
	// read once when the pane starts (history.go); nil when there is
	// none or it was not read yet.
	history *engine.ImportProgress
	// historyAsked is set once the import's progress was asked for.
	historyAsked bool

	w, h int
	lay  paneLayout
}

func newPane(ctx context.Context, idx int, self engine.Address, th themes.Theme, log *slog.Logger, now func() time.Time) pane {
	return pane{
		idx: idx, self: self, ctx: ctx, th: th, keys: defaultPaneKeys(), log: log, now: now,
		panels: [panelCount]panel{
			panelConversations: &convPanel{conversations.New(ctx, nil, th)},
			panelTimeline:      newTimelinePanel(timeline.New(ctx, nil, th), timeline.NewGroup(ctx, nil, th), now),
			panelComposer:      &composerPanel{composer.New(ctx, nil, th)},
			panelInbox:         &inboxPanel{inbox.New(ctx, nil, th)},
			panelOutbox:        &outboxPanel{outbox.New(ctx, nil, th)},
			panelEvents:        &eventsPanel{eventlog.New(th)},
			panelRequests:      &requestsPanel{requests.New(ctx, nil, th)},
			panelDevices:       &devicesPanel{devices.New(ctx, nil, th)},
		},
		changed: map[engine.Address]*identityChange{},
		xfer:    transfer.New(th),
	}
}

// attach gives the pane an open client: a new generation, fresh reads of
// every list and a listener on its events.
func (p *pane) attach(s *Attachment) tea.Cmd {
	p.gen++
	p.att = s
	p.closed = ""
	p.holdPresented = false
	p.present = false
	p.xfer = transfer.New(p.th) // the old client's transfers report nothing more
	p.readState()
	c := s.Client
	p.conv().SetSource(c)
	p.tl().setSource(c)
	p.comp().SetSource(c)
	p.tl().setSelf(p.self)
	p.in().SetSource(c)
	p.out().SetSource(c)
	p.sending = nil // the old client's uploads report nothing more
	cmds := []tea.Cmd{p.conv().Reload(), p.tl().Reload(), p.in().Reload(), p.out().Reload(), p.loadNames(), p.loadDrafts(), p.attachRequests(c), p.attachDevices(c), p.readUploads(), listen(s)}
	if !p.peer.IsZero() {
		cmds = append(cmds, p.loadSafety())
	}
	return tea.Batch(cmds...)
}

// detach marks the pane closed (crashed, reinstalling): results of the old
// client are dropped from now on.
func (p *pane) detach(why string) {
	p.xfer.Sync() // the transfers stop where the client did, shown until it is back
	p.gen++
	p.att = nil
	p.closed = why
	p.holdPresented = false
}

func listen(s *Attachment) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-s.Done:
			return clientEndedMsg{}
		case e := <-s.Events:
			// A note the demo's relay made during a hand-off is sent
			// before the event that reports the hand-off: read the notes
			// already waiting first, so that the log keeps that order.
			var notes []eventlog.Entry
		drain:
			for len(notes) < 64 {
				select {
				case n := <-s.Notes:
					notes = append(notes, n)
				default:
					break drain
				}
			}
			batch := []engine.Event{e}
			for len(batch) < 256 {
				select {
				case e := <-s.Events:
					batch = append(batch, e)
				default:
					return eventsMsg{notes: notes, events: batch}
				}
			}
			return eventsMsg{notes: notes, events: batch}
		case n := <-s.Notes:
			return noteMsg{entry: n}
		}
	}
}

// capturing reports whether typed characters belong to a text field.
func (p pane) capturing() bool {
	return p.focus == panelComposer || (p.focus == panelConversations && p.conv().Capturing()) ||
		(p.focus == panelTimeline && p.tl().Capturing()) || (p.focus == panelDevices && p.dev().Capturing())
}

func (p *pane) setActive(active bool) tea.Cmd {
	p.active = active
	if !active {
		p.blurAll()
		return nil
	}
	return p.setFocus(p.focus)
}

func (p *pane) blurAll() {
	for _, pn := range p.panels {
		pn.Blur()
	}
}

func (p *pane) setFocus(f panelID) tea.Cmd {
	p.blurAll()
	p.focus = f
	if !p.active {
		return nil
	}
	return p.panels[f].Focus()
}

// note adds an entry to the event log (and the log file).
func (p *pane) note(e eventlog.Entry) {
	if e.At.IsZero() {
		e.At = p.now()
	}
	p.ev().Add(e)
	if p.hooks.OnNote != nil {
		p.hooks.OnNote(p.self, e)
	}
	lvl := slog.LevelInfo
	if e.Level == eventlog.Error {
		lvl = slog.LevelWarn
	}
	p.log.Log(context.Background(), lvl, "event", "self", p.self.String(), "name", e.Name, "text", e.Text)
}

func (p *pane) noteErr(name string, err error, text string) {
	p.note(eventlog.Entry{Name: name, Text: text + ": " + err.Error(), Level: eventlog.Error})
}

// Update handles one message for this pane.
func (p pane) Update(msg tea.Msg) (pane, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		return p.key(msg)
	case eventsMsg:
		for _, n := range msg.notes {
			p.note(n)
		}
		return p.events(msg.events)
	case noteMsg:
		p.note(msg.entry)
		if p.att != nil {
			return p, listen(p.att)
		}
		return p, nil
	case clientEndedMsg:
		return p, nil
	case draftsMsg:
		p.gotDrafts(msg)
		return p, nil
	case draftSavedMsg:
		if msg.err != nil {
			p.noteErr(engine.ErrorName(msg.err), msg.err, "keeping the draft to "+msg.peer.String())
		}
		return p, nil
	case TickMsg:
		return p.tick(time.Time(msg))
	case conversations.SelectedMsg:
		var cmd tea.Cmd
		if msg.Group != nil {
			p.chooseGroup(*msg.Group, msg.Name)
			cmd = p.tl().showGroup(*msg.Group, msg.Name)
		} else {
			p.leaveGroup()
			p.tl().showPeer()
			cmd = p.selectPeer(msg.Peer)
		}
		var c2 tea.Cmd
		p.panels[panelConversations], c2 = p.conv().Update(msg)
		return p, tea.Batch(cmd, c2)
	case trace.Request:
		return p, p.readTrace(msg.Peer, msg.ID, msg.Direction)
	case traceMsg:
		if msg.err != nil {
			p.noteErr(engine.ErrorName(msg.err), msg.err, "reading a message's trace")
			return p, nil
		}
		cmd := p.setFocus(panelEvents)
		p.ev().Show(eventlog.Entry{At: p.now(), Name: "trace", Text: msg.text, Level: eventlog.Info})
		return p, cmd
	case conversations.GroupCommandMsg:
		return p, p.runGroupCommand(msg)
	case groupDoneMsg:
		return p, p.groupDone(msg)
	case conversations.NameMsg:
		return p, p.setName(msg.Peer, msg.Name)
	case namedMsg:
		if msg.err != nil {
			p.noteErr(engine.ErrorName(msg.err), msg.err, "naming "+msg.peer.String())
			return p, nil
		}
		return p, p.loadNames()
	case namesMsg:
		if msg.err != nil {
			p.noteErr(engine.ErrorName(msg.err), msg.err, "reading the names of devices")
			return p, nil
		}
		names := make(map[engine.Address]string, len(p.fileNames)+len(msg.names))
		for a, n := range p.fileNames {
			names[a] = n
		}
		for a, n := range msg.names {
			names[a] = n
		}
		p.conv().SetNames(names)
		p.tl().setNames(names)
		return p, nil
	case safetyMsg:
		if msg.peer == p.peer {
			p.safety, p.safeBasis, p.safeErr = msg.number, msg.basis, ""
			if msg.err != nil {
				p.safety, p.safeBasis, p.safeErr = "", "", msg.err.Error()
			}
		}
		return p, nil
	case newIdentityMsg:
		if ch := p.changed[msg.peer]; ch != nil {
			ch.number, ch.fingerprint = msg.number, msg.fingerprint
			if msg.err != nil {
				ch.err = engine.ErrorName(msg.err) + ": " + msg.err.Error()
				p.noteErr(engine.ErrorName(msg.err), msg.err, "reading "+msg.peer.String()+"'s new identity from the relay")
			}
		}
		return p, nil
	case acceptedMsg:
		if msg.err != nil {
			p.noteErr(engine.ErrorName(msg.err), msg.err, "accepting "+msg.peer.String()+"'s new identity")
		}
		if errors.Is(msg.err, engine.ErrFingerprintMismatch) && p.changed[msg.peer] != nil {
			// The relay serves another key than the one shown: show that
			// one, to be compared before it can be accepted.
			return p, p.readNewIdentity(msg.peer)
		}
		return p, nil
	case presentedMsg:
		if msg.err != nil {
			p.noteErr(engine.ErrorName(msg.err), msg.err, "marking the events presented")
		}
		return p, nil
	case historyImportMsg:
		p.history = nil
		switch {
		case msg.err != nil:
			p.noteErr(engine.ErrorName(msg.err), msg.err, "reading the history import's progress")
		case msg.ok:
			prog := msg.prog
			p.history = &prog
		}
		return p, p.layout()
	case timeline.ActionMsg:
		return p, p.act(msg)
	case timeline.NoticeMsg:
		p.notice = msg.Text
		return p, nil
	case timeline.VersionsMsg:
		return p, p.readVersions(msg)
	case versionsMsg:
		return p, p.versions(msg)
	case composer.ActedMsg:
		p.acted(msg)
		var c2 tea.Cmd
		p.panels[panelComposer], c2 = p.comp().Update(msg)
		return p, c2
	case composer.SentMsg:
		cmd := p.sent(msg)
		var c2 tea.Cmd
		p.panels[panelComposer], c2 = p.comp().Update(msg)
		return p, tea.Batch(cmd, c2)
	case composer.AttachMsg:
		return p, p.attachFile(msg)
	case fileSentMsg:
		return p, p.fileSent(msg)
	case uploadsMsg:
		return p, p.gotUploads(msg)
	case timeline.FetchMsg:
		return p, p.fetch(msg)
	case fetchDoneMsg:
		p.fetched(msg)
		cmd := p.layout()
		var c2 tea.Cmd
		p.panels[panelTimeline], c2 = p.tl().Update(msg.res)
		return p, tea.Batch(cmd, c2)
	case timeline.OpenMsg:
		return p, p.open(msg.Path)
	case openedMsg:
		return p, p.opened(msg)
	case inbox.FinalizedMsg:
		p.finalized(msg)
	case timeline.FinalizedMsg:
		p.finalizedHere(msg)
	case outbox.RetriedMsg:
		cmd := p.retried(msg)
		var c2 tea.Cmd
		p.panels[panelOutbox], c2 = p.out().Update(msg)
		return p, tea.Batch(cmd, c2)
	case requests.DoneMsg:
		cmd := p.requestDone(msg)
		var c2 tea.Cmd
		p.panels[panelRequests], c2 = p.req().Update(msg)
		return p, tea.Batch(cmd, c2)
	case devices.LinkedMsg:
		p.deviceLinked(msg)
		var c2 tea.Cmd
		p.panels[panelDevices], c2 = p.dev().Update(msg)
		return p, c2
	case devices.RemovedMsg:
		p.deviceRemoved(msg)
		var c2 tea.Cmd
		p.panels[panelDevices], c2 = p.dev().Update(msg)
		return p, c2
	case outbox.AbandonedMsg:
		if msg.Err != nil {
			p.noteErr(engine.ErrorName(msg.Err), msg.Err, "abandon")
		}
	}
	return p.broadcast(msg)
}

// broadcast hands a message to every panel; each takes its own.
func (p pane) broadcast(msg tea.Msg) (pane, tea.Cmd) {
	var cmds [panelCount]tea.Cmd
	for i, pn := range p.panels {
		p.panels[i], cmds[i] = pn.Update(msg)
	}
	return p, tea.Batch(cmds[:]...)
}

func (p pane) key(k tea.KeyMsg) (pane, tea.Cmd) {
	p.notice = ""
	switch {
	case p.focus == panelComposer && k.Type == tea.KeyTab:
		if cmd, ok := p.comp().Complete(); ok {
			return p, cmd
		}
		return p, p.setFocus((p.focus + 1) % panelCount)
	case input.Matches(k, p.keys.Next):
		return p, p.setFocus((p.focus + 1) % panelCount)
	case input.Matches(k, p.keys.Prev):
		return p, p.setFocus((p.focus + panelCount - 1) % panelCount)
	case input.Matches(k, p.keys.Accept):
		return p, p.accept()
	case input.Matches(k, p.keys.Retry):
		// The conversation's pending messages, and its uploads a killed
		// run left unfinished.
		if p.att != nil && p.group != nil {
			return p, tea.Batch(retryGroupLanes(p.ctx, p.att.Client, *p.group), p.resumeUploads())
		}
		if p.att != nil && !p.peer.IsZero() {
			return p, tea.Batch(outbox.RetryConversation(p.ctx, p.att.Client, p.peer), p.resumeUploads())
		}
		return p, nil
	}
	for f := panelID(0); f < panelCount; f++ {
		if input.Matches(k, p.keys.Jump[f]) {
			return p, p.setFocus(f)
		}
	}
	var cmd tea.Cmd
	p.panels[p.focus], cmd = p.panels[p.focus].Update(k)
	return p, cmd
}

// events draws what a run of engine events says, then listens again.
func (p pane) events(evs []engine.Event) (pane, tea.Cmd) {
	var cmds []tea.Cmd
	for _, e := range evs {
		if e.Kind != engine.EventStored {
			// A stored message is in the outbox at once; the log waits
			// for what the relay said of it.
			p.note(eventlog.FromEvent(e))
		}
		switch e.Kind {
		case engine.EventReceived:
			r := e.Result
			if r == nil {
				break
			}
			if r.Kind == engine.ResultError && errors.Is(r.Err, engine.ErrIdentityChanged) {
				cmds = append(cmds, p.markChanged(r.Sender))
			}
			// Until it comes from the accounts, the number is read again
			// as the person's messages come: a device list fetched since
			// may have made it the accounts' one.
			if r.Sender.User == p.peer.User && p.safeBasis != engine.SafetyAccounts {
				cmds = append(cmds, p.loadSafety())
			}
		case engine.EventSent:
			if e.Peer.User == p.peer.User && p.safeBasis != engine.SafetyAccounts {
				cmds = append(cmds, p.loadSafety())
			}
		case engine.EventIdentityAccepted:
			delete(p.changed, e.Peer)
			p.conv().SetChanged(e.Peer, false)
			p.updateBlocked()
			if e.Peer == p.peer {
				cmds = append(cmds, p.loadSafety())
			}
		case engine.EventSyncFailed:
			if errors.Is(e.Err, engine.ErrIdentityChanged) && !e.Peer.IsZero() {
				cmds = append(cmds, p.markChanged(e.Peer))
			}
		case engine.EventResync:
			cmds = append(cmds, p.conv().Reload(), p.tl().Reload(), p.in().Reload(), p.out().Reload())
		case engine.EventRequestAccepted:
			cmds = append(cmds, p.requestAccepted(e))
		}
		var cmd tea.Cmd
		p, cmd = p.broadcast(e)
		cmds = append(cmds, cmd)
	}
	p.present = true
	if p.att != nil {
		cmds = append(cmds, listen(p.att))
	}
	return p, tea.Batch(cmds...)
}

// readState reads the connection state for the status bar (in Update, so
// that View reads nothing shared).
func (p *pane) readState() {
	p.connState = "unknown"
	if p.att != nil && p.att.State != nil {
		p.connState = p.att.State()
	}
	if p.att != nil {
		p.policy = p.att.Client.Policy()
	}
	p.tl().SetCommitOnRead(p.policy.Commit == engine.CommitOnRead)
}

func (p *pane) tick(now time.Time) (pane, tea.Cmd) {
	var cmds []tea.Cmd
	if p.att == nil {
		return *p, nil
	}
	p.readState()
	if !p.historyAsked {
		p.historyAsked = true
		cmds = append(cmds, p.readHistoryImport())
	}
	p.xfer.Sync()
	p.in().ExpireStatus(now)
	p.out().ExpireStatus(now)
	// Under the on-read policy, what the conversation in view shows is
	// read: the pane has the keyboard and the terminal has the focus.
	if p.active && !p.blurred && p.lay.topH > 1 {
		cmds = append(cmds, p.tl().CommitShown())
	}
	if p.present && !p.holdPresented && len(p.att.Events) == 0 {
		p.present = false
		c, ctx := p.att.Client, p.ctx
		cmds = append(cmds, func() tea.Msg { return presentedMsg{err: c.MarkPresented(ctx)} })
	}
	cmds = append(cmds, p.saveDrafts())
	return *p, tea.Batch(cmds...)
}

func (p *pane) selectPeer(peer engine.Address) tea.Cmd {
	if peer == p.peer {
		return nil
	}
	p.switchDraft(p.peer, peer)
	p.peer = peer
	p.safety, p.safeBasis, p.safeErr = "", "", ""
	p.comp().SetPeer(peer)
	p.updateBlocked()
	return tea.Batch(p.tl().SetPeer(peer), p.loadSafety())
}

// readTrace reads what this device (and, in the demo, the peer) knows of one
// message and draws it.
func (p pane) readTrace(peer engine.Address, id wire.LogicalID, dir engine.Direction) tea.Cmd {
	if p.att == nil {
		return nil
	}
	c, ctx, self, other := p.att.Client, p.ctx, p.self, p.hooks.Peers
	return func() tea.Msg {
		own, err := c.Trace(ctx, peer, id, dir)
		if err != nil {
			return traceMsg{err: err}
		}
		var theirs *engine.Trace
		if other != nil {
			if oc := other(peer); oc != nil {
				back := engine.DirectionIn
				if dir == engine.DirectionIn {
					back = engine.DirectionOut
				}
				if l, err := oc.Trace(ctx, self, id, back); err == nil {
					theirs = &l
				}
			}
		}
		msg := traceMsg{id: id, text: tracetext.Draw(self, own, theirs)}
		for _, l := range []*engine.Trace{&own, theirs} {
			if l != nil {
				for _, a := range l.Attempts {
					msg.envs = append(msg.envs, a.Envelope)
				}
			}
		}
		return msg
	}
}
