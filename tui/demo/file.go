// The file scenario: alice sends a 20 MiB file, bob is killed at about
// 40% of its download, reopened, and resumes from the chunks he had kept.
// "Killed" is the demo's crash (ctrl+x k) timed by the fault relay: when
// bob's download asks for the chunk at 40%, the relay holds the request
// and the demo closes his client and store abruptly; the held request
// then fails. What the engine fsynced before stays in his profile.

package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// DemoFileSize is the size of the file the file scenario sends.
const DemoFileSize = 20 << 20

// demoFileName is the file's name, in the demo's directory.
const demoFileName = "holiday-video.mp4"

var errKilled = errors.New("demo: the profile was killed during this request")

// CreateBlob implements engine.BlobRelay.
func (f *faultRelay) CreateBlob(ctx context.Context, size int64) (wire.BlobID, error) {
	b := f.Relay
	return b.CreateBlob(ctx, size)
}

// BlobHeld implements engine.BlobRelay.
func (f *faultRelay) BlobHeld(ctx context.Context, id wire.BlobID) (int64, int64, error) {
	b := f.Relay
	return b.BlobHeld(ctx, id)
}

// PutBlob implements engine.BlobRelay.
func (f *faultRelay) PutBlob(ctx context.Context, id wire.BlobID, offset int64, data []byte) error {
	b := f.Relay
	return b.PutBlob(ctx, id, offset, data)
}

// GetBlob implements engine.BlobRelay. Armed with killAt, the first read
// from that offset on announces it (reached) and waits until the profile
// is closed (released), then fails: nothing past the kill is kept.
func (f *faultRelay) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int) ([]byte, error) {
	b := f.Relay
	f.mu.Lock()
	kill := f.kill
	if kill != nil && offset >= kill.at {
		f.kill = nil
	} else {
		kill = nil
	}
	f.mu.Unlock()
	if kill != nil {
		close(kill.reached)
		select {
		case <-f.released:
		case <-ctx.Done():
		}
		return nil, errKilled
	}
	return b.GetBlob(ctx, id, offset, n)
}

// killPoint is a download's kill, armed on bob's fault relay.
type killPoint struct {
	at      int64
	reached chan struct{}
}

// armKill arms the kill at ciphertext offset at; the channel is closed
// when a download reaches it.
func (f *faultRelay) armKill(at int64) <-chan struct{} {
	k := &killPoint{at: at, reached: make(chan struct{})}
	f.mu.Lock()
	f.kill = k
	f.mu.Unlock()
	return k.reached
}

// release fails a read held at a kill: the profile is closed.
func (f *faultRelay) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.isReleased {
		f.isReleased = true
		close(f.released)
	}
}

// killMsg says that pane's download reached its kill point.
type killMsg struct{ pane int }

// demoFile is the path of the file the scenario sends.
func (w *world) demoFile() string { return filepath.Join(w.dir, demoFileName) }

// makeFileCmd writes the scenario's file (deterministic bytes) once.
func makeFileCmd(m *Model) tea.Cmd {
	w, size := m.world, m.fileSize
	return func() tea.Msg {
		path := w.demoFile()
		err := writeDemoFile(path, size)
		msg := demoMsg{pane: 0, what: "make a file", err: err}
		if err == nil {
			msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_file", Level: eventlog.Demo,
				Text: fmt.Sprintf("alice has %s (%d bytes) to send", path, size)}}
		}
		return msg
	}
}

func writeDemoFile(path string, size int64) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() == size {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	r := rand.NewChaCha8([32]byte{'p', 'a', 'r', 'l', 'e', 'y'})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(int64(len(buf)), left)
		_, _ = r.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	return f.Close()
}

// attachFile types "/file PATH" in alice's composer.
func attachFile(m *Model) tea.Cmd {
	return m.typeOn(0, keys([]tea.KeyMsg{alt('3'), runes("/file " + m.world.demoFile()), ctrl(tea.KeyEnter)}))
}

// killBobAt40 arms bob's relay to kill him at about 40% of the download,
// then presses d in his conversation.
func killBobAt40(m *Model) tea.Cmd {
	w, bob := m.world, m.chat.Pane(1).Self
	d := w.device(bob)
	w.mu.Lock()
	faults := d.faults
	w.mu.Unlock()
	if faults == nil {
		return nil
	}
	chunks := int64(wire.FileChunks(m.fileSize, engine.DefaultFileChunkSize))
	at := chunks * 4 / 10 * int64(engine.DefaultFileChunkSize+wire.FileTagSize)
	reached := faults.armKill(at)
	ctx := w.ctx
	return tea.Batch(m.typeOn(1, []tea.KeyMsg{alt('2'), runes("d")}), func() tea.Msg {
		select {
		case <-reached:
			return killMsg{pane: 1}
		case <-ctx.Done():
			return nil
		}
	})
}

// downloadAgain presses d in bob's conversation.
func downloadAgain(m *Model) tea.Cmd { return m.typeOn(1, []tea.KeyMsg{alt('2'), runes("d")}) }

// killed crashes the pane whose download reached its kill point.
func (m *Model) killed(msg killMsg) tea.Cmd {
	if msg.pane >= m.chat.Panes() || !m.chat.Pane(msg.pane).Open {
		return nil
	}
	m.detach(msg.pane, "crashed")
	return m.world.crashCmd(msg.pane, m.chat.Pane(msg.pane).Self, "at about 40% of its download")
}

func fileScenario() scenario {
	const key = "[file] " + demoFileName
	return scenario{name: "file resumed after a kill", steps: []step{
		{on: 0, do: makeFileCmd, done: fileMade, say: "alice has a 20 MiB file to send (written in the demo's directory)."},
		{on: 0, do: attachFile, done: all(stored(demoAlice, demoBob, key, key, true), at(key, "pending"), shownWaiting(1, key)),
			say: "alice types /file PATH: the file is encrypted in 64 KiB chunks and uploaded to the relay's blob store (the bar), then its manifest goes to bob like a message."},
		{on: 1, do: killBobAt40, done: paneIs(1, "crashed"),
			say: "bob presses d to download it; at about 40% he is killed: his client and store are closed abruptly. The chunks he verified are fsynced in his profile."},
		{on: 1, keys: demoCtl('o'), done: all(paneIs(1, ""), at(key, "pending"), shownWaiting(1, key)),
			say: "bob reopens: the file is still waiting (a file is committed only by its download)."},
		{on: 1, do: downloadAgain, done: all(at(key, "committed"), sender(key, engine.SentAcknowledged)),
			say: "bob presses d again: the download resumes from the last chunk he kept, verifies the whole digest, saves the file and commits; the ACK clears alice's."},
		{on: 0, done: onceEach, say: verdictSay},
	}}
}
