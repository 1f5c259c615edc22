// Files in a pane: the composer's attachments and the timeline's downloads
// run the engine's transfers in commands (never on the UI goroutine), each
// with a line in the transfer strip; a saved file opens with the system's
// opener.

package tui

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/adrg/xdg"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/picture"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/tui/transfer"
	"github.com/parley-chat/parley/wire"
)

// FileSource is what a pane sends and fetches files through:
// *engine.Client implements it. A client without it cannot attach or
// download (the pane says so).
type FileSource interface {
	SendFile(ctx context.Context, peer engine.Address, path string, progress engine.Progress) (wire.LogicalID, error)
	SendGroupFile(ctx context.Context, group wire.GroupID, path string, progress engine.Progress) (wire.LogicalID, error)
	FetchFile(ctx context.Context, sender engine.Address, id wire.LogicalID, dir string, progress engine.Progress) (string, error)
	Uploads(ctx context.Context) ([]engine.Upload, error)
}

var _ FileSource = (*engine.Client)(nil)

var errNoFiles = errors.New("this profile's client cannot transfer files")

// DefaultDownloads is where downloads are saved unless told otherwise: the
// XDG download directory (~/Downloads on most systems).
func DefaultDownloads() string {
	if d := xdg.UserDirs.Download; d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "Downloads")
}

// fileSentMsg reports an attachment's upload and manifest.
type fileSentMsg struct {
	key  int
	path string
	to   string
	name string
	id   wire.LogicalID
	err  error
}

// openedMsg reports the system's opener started on a saved file.
type openedMsg struct {
	path string
	err  error
}

// attachFile uploads the file a composer line named, to its peer or group.
func (p *pane) attachFile(a composer.AttachMsg) tea.Cmd {
	fs, ok := p.files()
	if !ok {
		p.noteErr("file_not_sent", errNoFiles, "attach "+a.Path)
		return nil
	}
	to := a.Peer.String()
	if a.Group != nil {
		to = "#" + p.comp().GroupName()
	}
	name := filepath.Base(a.Path)
	key, progress := p.xfer.Start(true, name, to)
	ctx, path := p.ctx, composer.ExpandPath(a.Path)
	var group *wire.GroupID
	if a.Group != nil {
		g := *a.Group
		group = &g
	}
	peer := a.Peer
	if p.sending == nil {
		p.sending = map[string]bool{}
	}
	abs := path // as the engine records it
	if a, err := filepath.Abs(path); err == nil {
		abs = a
	}
	p.sending[abs] = true
	p.showStopped()
	return tea.Batch(p.layout(), func() tea.Msg {
		var id wire.LogicalID
		var err error
		if group != nil {
			id, err = fs.SendGroupFile(ctx, *group, path, progress)
		} else {
			id, err = fs.SendFile(ctx, peer, path, progress)
		}
		return fileSentMsg{key: key, path: abs, to: to, name: name, id: id, err: err}
	})
}

// uploadsMsg carries the uploads begun and not finished (Uploads).
type uploadsMsg struct {
	list []engine.Upload
	err  error
}

// readUploads reads the uploads a run left unfinished: after an attach
// (a killed run left them), and after each upload ends.
func (p *pane) readUploads() tea.Cmd {
	fs, ok := p.files()
	if !ok {
		return nil
	}
	ctx := p.ctx
	return func() tea.Msg {
		l, err := fs.Uploads(ctx)
		return uploadsMsg{list: l, err: err}
	}
}

// uploadTo reads an upload's recipient: a device, or a group ("group:"
// and its ID in hex); false when it is neither.
func uploadTo(u engine.Upload) (engine.Address, *wire.GroupID, bool) {
	if g, ok := strings.CutPrefix(u.To, "group:"); ok {
		var gid wire.GroupID
		b, err := hex.DecodeString(g)
		if err != nil || len(b) != len(gid) {
			return engine.Address{}, nil, false
		}
		copy(gid[:], b)
		return engine.Address{}, &gid, true
	}
	a, err := engine.ParseAddress(u.To)
	return a, nil, err == nil
}

// gotUploads keeps the uploads read and shows those not in flight here.
func (p *pane) gotUploads(m uploadsMsg) tea.Cmd {
	if m.err != nil {
		p.noteErr(engine.ErrorName(m.err), m.err, "reading the interrupted uploads")
		return nil
	}
	p.uploads = m.list
	p.showStopped()
	return p.layout()
}

// showStopped shows in the strip the uploads begun and not finished that
// no command of this pane is running.
func (p *pane) showStopped() {
	var st []transfer.Stopped
	for _, u := range p.uploads {
		if p.sending[u.Path] {
			continue
		}
		if other, ok := p.uploadTarget(u); ok {
			st = append(st, transfer.Stopped{Name: filepath.Base(u.Path), Other: other, Size: u.Size})
		}
	}
	p.xfer.SetStopped(st)
}

// uploadTarget names an upload's peer, or its group as the conversations
// list it.
func (p *pane) uploadTarget(u engine.Upload) (string, bool) {
	peer, group, ok := uploadTo(u)
	switch {
	case !ok:
		return "", false
	case group == nil:
		return peer.String(), true
	}
	for _, g := range p.conv().GroupItems() {
		if g.ID == *group {
			return "#" + layout.OneLine([]byte(g.Name), 32), true
		}
	}
	return "#" + hex.EncodeToString(group[:4]), true
}

// resumeUploads starts again the interrupted uploads to the conversation
// chosen (ctrl+r): sending the same file resumes from what the relay holds.
func (p *pane) resumeUploads() tea.Cmd {
	var cmds []tea.Cmd
	for _, u := range p.uploads {
		peer, group, ok := uploadTo(u)
		switch {
		case !ok || p.sending[u.Path]:
		case p.group != nil && group != nil && *group == *p.group:
			cmds = append(cmds, p.attachFile(composer.AttachMsg{Path: u.Path, Group: group}))
		case p.group == nil && group == nil && peer == p.peer:
			cmds = append(cmds, p.attachFile(composer.AttachMsg{Path: u.Path, Peer: peer}))
		}
	}
	return tea.Batch(cmds...)
}

func (p *pane) fileSent(m fileSentMsg) tea.Cmd {
	p.xfer.Finish(m.key)
	delete(p.sending, m.path)
	var nse *engine.MessageNotSentError
	switch {
	case m.err == nil:
		p.note(eventlog.Entry{Name: "file_sent", Text: fmt.Sprintf("%s uploaded to the relay, its manifest %x sent to %s (pending until the ACK)", m.name, m.id[:4], m.to), Level: eventlog.Info})
	case errors.As(m.err, &nse):
		p.note(eventlog.Entry{Name: "file_sent", Text: fmt.Sprintf("%s uploaded, its manifest to %s stored pending: %v (a retry sends it)", m.name, m.to, nse.Err), Level: eventlog.Info})
	default:
		p.noteErr(engine.ErrorName(m.err), m.err, "file "+m.name+" to "+m.to+" not sent (sending it again resumes the upload)")
		p.comp().SetError(engine.ErrorName(m.err) + ": " + m.err.Error())
	}
	return tea.Batch(p.layout(), p.readUploads())
}

// fetch downloads a waiting file into the downloads directory; the
// engine commits it once saved.
func (p *pane) fetch(f timeline.FetchMsg) tea.Cmd {
	fs, ok := p.files()
	if !ok {
		return func() tea.Msg { return timeline.FetchedMsg{Sender: f.Sender, ID: f.ID, Name: f.Name, Err: errNoFiles} }
	}
	key, progress := p.xfer.Start(false, f.Name, f.Sender.String())
	ctx, dir, noPreview := p.ctx, p.downloads(), p.hooks.NoPreviews
	kitty := p.hooks.Graphics.Kitty(os.Getenv)
	return tea.Batch(p.layout(), func() tea.Msg {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fetchDoneMsg{key: key, res: timeline.FetchedMsg{Sender: f.Sender, ID: f.ID, Name: f.Name, Err: err}}
		}
		path, err := fs.FetchFile(ctx, f.Sender, f.ID, dir, progress)
		res := timeline.FetchedMsg{Sender: f.Sender, ID: f.ID, Name: f.Name, Path: path, Err: err}
		if err == nil && !noPreview {
			res.Preview = preview(path, kitty)
		}
		return fetchDoneMsg{key: key, res: res}
	})
}

// Preview size in cells: a picture is drawn in at most this many columns
// and rows under its message.
const (
	previewCols = 40
	previewRows = 12
)

// preview draws the picture saved at path, which FetchFile wrote after its
// digest verified, with the kitty graphics protocol or in half blocks: nil
// when it is not a PNG, JPEG or GIF by its bytes, or beyond the bounds
// package picture checks first.
func preview(path string, kitty bool) []string {
	img, err := picture.Load(path)
	if err != nil {
		return nil
	}
	if kitty {
		return picture.KittyCells(img, previewCols, previewRows)
	}
	return picture.HalfBlocks(img, previewCols, previewRows)
}

// fetchDoneMsg is a download's end: its strip line goes, its result goes to
// the timeline.
type fetchDoneMsg struct {
	key int
	res timeline.FetchedMsg
}

func (p *pane) fetched(m fetchDoneMsg) {
	p.xfer.Finish(m.key)
	r := m.res
	if r.Err != nil {
		p.noteErr(engine.ErrorName(r.Err), r.Err, "download of "+r.Name+" from "+r.Sender.String())
		return
	}
	p.note(eventlog.Entry{Name: "file_saved", Text: fmt.Sprintf("%s from %s verified and saved as %s, committed", r.Name, r.Sender, r.Path), Level: eventlog.Info})
}

// open starts the system's opener on path without waiting for it.
func (p *pane) open(path string) tea.Cmd {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if p.hooks.Opener != "" {
		opener = p.hooks.Opener
	}
	return func() tea.Msg {
		bin, err := exec.LookPath(opener)
		if err != nil {
			return openedMsg{path: path, err: fmt.Errorf("no %s on this system to open it: %w", opener, err)}
		}
		cmd := exec.Command(bin, path)
		if err := cmd.Start(); err != nil {
			return openedMsg{path: path, err: err}
		}
		go func() { _ = cmd.Wait() }() // reaped; the opener outlives nothing of ours
		return openedMsg{path: path}
	}
}

func (p *pane) opened(m openedMsg) tea.Cmd {
	var cmd tea.Cmd
	p.panels[panelTimeline], cmd = p.tl().Update(timeline.OpenedMsg{Path: m.path, Err: m.err})
	if m.err != nil {
		p.note(eventlog.Entry{Name: "open_failed", Text: m.err.Error() + "; the file is at " + m.path, Level: eventlog.Error})
		return cmd
	}
	p.note(eventlog.Entry{Name: "file_opened", Text: m.path + " handed to the system's opener", Level: eventlog.Info})
	return cmd
}

func (p *pane) files() (FileSource, bool) {
	if p.att == nil {
		return nil, false
	}
	fs, ok := p.att.Client.(FileSource)
	return fs, ok
}

func (p *pane) downloads() string {
	if p.hooks.Downloads != "" {
		return p.hooks.Downloads
	}
	return DefaultDownloads()
}
