package demo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
)

// A demo script is a list of actions, one per line, that the demo plays
// as a person would type them, so that a talk or a bug report can be
// reproduced exactly (parley demo --script FILE). Blank lines and lines
// starting with # are skipped. Actions name a profile: alice or bob (both
// where it says so).
//
//	send alice TEXT          alice writes TEXT to bob
//	hold alice|bob|both      hold delivery (release: let it go)
//	release alice|bob|both
//	drop alice               lose alice's next envelope after the relay accepts it
//	drop-ack bob             lose bob's next ACK
//	commit bob               commit everything pending in bob's inbox
//	discard bob              discard everything pending in bob's inbox
//	retry alice              resend alice's pending messages
//	abandon alice            abandon everything pending in alice's outbox
//	crash bob                crash now (crash-next: after the next transition)
//	crash-next bob
//	reopen bob
//	reinstall bob            a new identity for bob/1
//	accept alice             accept the peer's new identity
//	forget                   forget both sessions (a collision can be staged)
//	prune bob                prune bob's finalized records
//	scenario N               start guided scenario N; step plays its next step
//	step
//	wait DURATION            pause (each action already waits 400ms)
//	quit

// ScriptAction is one parsed line of a demo script.
type ScriptAction struct {
	Line int
	Verb string
	Who  int // pane: 0 alice, 1 bob, -1 both or none
	Text string
	Wait time.Duration
	N    int
}

// scriptPace is how long the demo waits after each action.
const scriptPace = 400 * time.Millisecond

// ParseScript reads a demo script; an error names the line.
func ParseScript(r io.Reader) ([]ScriptAction, error) {
	var out []ScriptAction
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, err := parseAction(line)
		if err != nil {
			return nil, fmt.Errorf("script line %d: %w", n, err)
		}
		a.Line = n
		out = append(out, a)
	}
	return out, sc.Err()
}

func parseAction(line string) (ScriptAction, error) {
	f := strings.Fields(line)
	a := ScriptAction{Verb: f[0], Who: -1}
	who := func(both bool) error {
		if len(f) < 2 {
			return fmt.Errorf("%s: name alice or bob", a.Verb)
		}
		switch f[1] {
		case "alice":
			a.Who = 0
		case "bob":
			a.Who = 1
		case "both":
			if !both {
				return fmt.Errorf("%s: name alice or bob, not both", a.Verb)
			}
		default:
			return fmt.Errorf("%s: unknown profile %q (alice or bob)", a.Verb, f[1])
		}
		return nil
	}
	var err error
	switch a.Verb {
	case "send":
		if err = who(false); err == nil {
			a.Text = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "send")), f[1]))
			if a.Text == "" {
				err = fmt.Errorf("send: no text")
			}
		}
	case "hold", "release":
		err = who(true)
	case "drop", "drop-ack", "commit", "discard", "retry", "abandon", "crash", "crash-next", "reopen", "reinstall", "accept", "prune":
		err = who(false)
	case "forget", "step", "quit":
	case "scenario":
		if len(f) < 2 {
			return a, fmt.Errorf("scenario: which (1 to %d)", len(scenarios()))
		}
		if a.N, err = strconv.Atoi(f[1]); err != nil || a.N < 1 || a.N > len(scenarios()) {
			err = fmt.Errorf("scenario: %q is not 1 to %d", f[1], len(scenarios()))
		}
	case "wait":
		if len(f) < 2 {
			return a, fmt.Errorf("wait: how long (500ms, 2s)")
		}
		if a.Wait, err = time.ParseDuration(f[1]); err != nil || a.Wait < 0 {
			err = fmt.Errorf("wait: %q is not a duration", f[1])
		}
	default:
		err = fmt.Errorf("unknown action %q", a.Verb)
	}
	return a, err
}

// playScript plays the next action when its time has come; it returns
// the commands the action started.
func (m *Model) playScript(now time.Time) tea.Cmd {
	if m.scriptAt >= len(m.script) || now.Before(m.scriptNext) {
		return nil
	}
	a := m.script[m.scriptAt]
	m.scriptAt++
	m.scriptNext = now.Add(scriptPace)
	panes := []int{a.Who}
	if a.Who < 0 {
		panes = []int{0, 1}
	}
	var cmds []tea.Cmd
	typeOn := func(i int, ks ...[]tea.KeyMsg) { cmds = append(cmds, m.typeOn(i, keys(ks...))) }
	switch a.Verb {
	case "send":
		typeOn(a.Who, write(a.Text))
	case "hold", "release":
		for _, i := range panes {
			if m.world.flags(m.chat.Pane(i).Self).held != (a.Verb == "hold") {
				typeOn(i, demoCtl('h'))
			}
		}
	case "drop":
		typeOn(a.Who, demoCtl('d'))
	case "drop-ack":
		typeOn(a.Who, demoCtl('a'))
	case "commit":
		typeOn(a.Who, []tea.KeyMsg{alt('4'), runes("C")})
	case "discard":
		typeOn(a.Who, []tea.KeyMsg{alt('4'), runes("D"), runes("y")})
	case "retry":
		typeOn(a.Who, []tea.KeyMsg{ctrl(tea.KeyCtrlR)})
	case "abandon":
		typeOn(a.Who, []tea.KeyMsg{alt('5'), runes("X"), runes("y")})
	case "crash":
		typeOn(a.Who, demoCtl('k'))
	case "crash-next":
		typeOn(a.Who, demoCtl('K'))
	case "reopen":
		typeOn(a.Who, demoCtl('o'))
	case "reinstall":
		typeOn(a.Who, demoCtl('i'))
	case "accept":
		typeOn(a.Who, []tea.KeyMsg{ctrl(tea.KeyCtrlT)})
	case "forget":
		typeOn(0, demoCtl('s'))
	case "prune":
		typeOn(a.Who)
		cmds = append(cmds, pruneHere(m))
	case "scenario":
		cmds = append(cmds, m.startScenario(a.N))
	case "step":
		cmds = append(cmds, m.nextStep())
	case "wait":
		m.scriptNext = now.Add(a.Wait)
	case "quit":
		cmds = append(cmds, tea.Quit)
	}
	m.chat.Note(m.chat.Active(), eventlog.Entry{Name: "demo_script", Level: eventlog.Demo, Text: fmt.Sprintf("line %d: %s", a.Line, a.Verb)})
	return tea.Batch(cmds...)
}

// recorder writes every event entry of the demo's profiles as a JSON line
// (parley demo --record FILE).
type recorder struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func newRecorder(w io.Writer) *recorder { return &recorder{enc: json.NewEncoder(w)} }

// record writes one entry of profile self; the first write error stops
// the recording and is kept.
func (r *recorder) record(self engine.Address, e eventlog.Entry) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = r.enc.Encode(struct {
		At      string `json:"at"`
		Profile string `json:"profile"`
		Name    string `json:"name"`
		Text    string `json:"text"`
	}{e.At.UTC().Format(time.RFC3339Nano), self.String(), e.Name, e.Text})
}
