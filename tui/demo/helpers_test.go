package demo

import (
	"bytes"
	"context"
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"crypto/sha256"
	"fmt"
	"github.com/charmbracelet/x/ansi"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	time.Local = time.UTC
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Unsetenv("NO_COLOR")
	// teatest leaves a goroutine waiting for SIGINT behind each program.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"), goleak.IgnoreTopFunction("os/signal.loop"))
}

// testNow is the fixed clock of every test: times on screen are stable.
var testNow = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

var discard = slog.New(slog.DiscardHandler)

// detRand is a deterministic Randomness (ChaCha8 from a seed, derandomized
// ML-KEM), so that identities, safety numbers and IDs on screen repeat.
type detRand struct {
	mu sync.Mutex
	c  *rand.ChaCha8
}

func newDetRand(seed string) *detRand {
	return &detRand{c: rand.NewChaCha8(sha256.Sum256([]byte(seed)))}
}

func (d *detRand) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c.Read(p)
}

func (d *detRand) Encapsulate(ek *mlkem.EncapsulationKey768) ([]byte, []byte, error) {
	var m [32]byte
	d.Read(m[:])
	return mlkemtest.Encapsulate768(ek, m[:])
}

// probe wraps the root model and publishes its screen after every update,
// so that a test can wait for what the screen shows.
type probe struct {
	Model
	screen *atomic.Pointer[string]
}

func (p probe) Init() tea.Cmd { return p.Model.Init() }

func (p probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.Model.Update(msg)
	p.Model = m.(Model)
	s := p.Model.View()
	p.screen.Store(&s)
	return p, cmd
}

// demoRun is a demo driven through a real Bubble Tea program (teatest), on
// real profiles and the embedded relay.
type demoRun struct {
	t      *testing.T
	w      *world
	tm     *teatest.TestModel
	screen *atomic.Pointer[string]
}

type demoConfig struct {
	theme  string
	w, h   int
	mutate func(*Options)
	// stepWait bounds a scenario step's check (stepWait when zero).
	stepWait time.Duration
	// noDeviceWord keeps the relay's word that a peer's device took an
	// envelope from the screen: it comes when the relay's push does, so a
	// frame compared byte for byte leaves it out.
	noDeviceWord bool
}

// startDemo starts the demo at 160x48 (or cfg's size) with a fixed clock
// and deterministic randomness; the cleanup quits it and closes the world.
func startDemo(t *testing.T, cfg demoConfig) *demoRun {
	t.Helper()
	if cfg.w == 0 {
		cfg.w, cfg.h = 160, 48
	}
	th, err := themes.GetColor(cfg.theme, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := newWorld(ctx, t.TempDir(), startTestRelay(t, fixedClock), discard, fixedClock)
	// A stream per opening: a profile reopened after a crash must not draw
	// the keys it drew before (its ratchet keys would repeat).
	var mu sync.Mutex
	opened := map[string]int{}
	w.noDeviceWord = cfg.noDeviceWord
	w.random = func(a engine.Address, install int) engine.Randomness {
		seed := a.String() + "#" + string(rune('0'+install))
		mu.Lock()
		defer mu.Unlock()
		if n := opened[seed]; n > 0 {
			opened[seed]++
			return newDetRand(fmt.Sprintf("%s reopened %d", seed, n))
		}
		opened[seed] = 1
		return newDetRand(seed)
	}
	opts := Options{Options: tui.Options{Now: fixedClock}}
	if cfg.mutate != nil {
		cfg.mutate(&opts)
	}
	w.policy = retryBounds(opts.Policy)
	m, err := newModel(ctx, w, th, discard, opts)
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	if cfg.stepWait > 0 {
		m.stepWait = cfg.stepWait
	}
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, probe{Model: m, screen: &screen}, teatest.WithInitialTermSize(cfg.w, cfg.h))
	d := &demoRun{t: t, w: w, tm: tm, screen: &screen}
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		cancel()
		if err := w.Close(); err != nil {
			t.Errorf("closing the demo: %v", err)
		}
	})
	return d
}

// view returns the screen as last drawn.
func (d *demoRun) view() string {
	if s := d.screen.Load(); s != nil {
		return *s
	}
	return ""
}

// waitFor waits until every want appears on the screen.
func (d *demoRun) waitFor(want ...string) string {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := d.view()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the screen never showed %q; last screen:\n%s", missing, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitUntil waits until ok holds for the screen.
// waitForAckProcessed waits until alice's event log says she processed
// bob's ACK. The word "acknowledged" alone is not enough: a message's own
// text or the status lines can hold it before the ACK came back.
func (d *demoRun) waitForAckProcessed() {
	d.t.Helper()
	d.waitUntil("alice processing bob's ACK", func(s string) bool {
		return strings.Contains(ansi.Strip(s), "acknowledgement from bob/1")
	})
}

func (d *demoRun) waitUntil(what string, ok func(string) bool) string {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := d.view()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the screen never showed %s; last screen:\n%s", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the screen stops changing for a while, so that what a
// golden file records is the state everything converged to.
func (d *demoRun) settle() string {
	d.t.Helper()
	last, since := d.view(), time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for time.Since(since) < 400*time.Millisecond {
		if time.Now().After(deadline) {
			d.t.Fatal("the screen never settled")
		}
		time.Sleep(20 * time.Millisecond)
		if s := d.view(); s != last {
			last, since = s, time.Now()
		}
	}
	return last
}

func (d *demoRun) typeText(s string) {
	for _, r := range s {
		d.tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func (d *demoRun) key(k tea.KeyType) { d.tm.Send(tea.KeyMsg{Type: k}) }

func (d *demoRun) alt(r rune) { d.tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: true}) }

// demo sends ctrl+x then a key.
func (d *demoRun) demo(r rune) {
	d.key(tea.KeyCtrlX)
	d.typeText(string(r))
}

// playCollision plays the guided collision (ctrl+x 1) to its end and
// stops it, once each message is in the other's history once.
func (d *demoRun) playCollision() {
	d.t.Helper()
	d.waitFor("Composer → bob/1", "exactly once ·")
	d.demo('1')
	for i := 1; i < len(scenarios()[0].steps); i++ {
		if i == 3 {
			// Both sends accepted before the release, so that the event
			// logs read the same on every run.
			d.waitUntil("both sends relay accepted", func(s string) bool {
				return strings.Count(s, "relay_accepted") == 2
			})
		}
		d.settle()
		d.key(tea.KeySpace)
	}
	d.waitFor("alice→bob 1 sent: 1 once · bob→alice 1 sent: 1 once")
	d.key(tea.KeyEsc)
}

// send types a line into the focused composer and presses enter.
func (d *demoRun) send(s string) {
	d.typeText(s)
	d.key(tea.KeyEnter)
}

// syncBuffer is an output the program writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
