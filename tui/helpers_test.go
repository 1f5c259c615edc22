package tui

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
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

// The profiles of the tests, and how their stores are sealed (a cheap KDF).
var (
	demoAlice      = engine.MustParseAddress("alice/1")
	demoBob        = engine.MustParseAddress("bob/1")
	demoPassphrase = []byte("parley demo")
	demoKDF        = store.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}
)
