package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/wire"
)

// sendFile is "parley send (PEER|GROUP) --file PATH": the upload, then the
// manifest as a message; it prints the logical ID like any send.
func sendFile(ctx context.Context, env *cliEnv, f *flags, to, path string) error {
	var peer engine.Address
	group := isGroupOperand(to)
	if !group {
		var err error
		if peer, err = parsePeer(to); err != nil {
			return err
		}
	}
	switch fi, err := os.Stat(path); {
	case err != nil:
		return readError("", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	}
	chunk, err := fileChunkSize(env)
	if err != nil {
		return err
	}
	p, err := f.openWith(ctx, env, profile.Options{RefreshPreKeys: f.network, Engine: engine.Config{Files: engine.FileConfig{ChunkSize: chunk}}})
	if err != nil {
		return err
	}
	defer closeProfile(p)
	var id wire.LogicalID
	if group {
		g, gerr := resolveGroup(ctx, p.Client, to)
		if gerr != nil {
			return gerr
		}
		id, err = p.Client.SendGroupFile(ctx, g.ID, path, nil)
	} else {
		id, err = p.Client.SendFile(ctx, peer, path, nil)
	}
	var notSent *engine.MessageNotSentError
	if err != nil && !errors.As(err, &notSent) {
		return fileError(err)
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(id)}, {"recipient", to}, {"accepted", err == nil}})
	} else {
		fmt.Fprintln(env.stdout, hexID(id))
	}
	if err != nil {
		return wordedf(err, "the file stays pending: %s; \"parley retry %s\" sends it again", pendingCause(env, err), to)
	}
	return nil
}

// readError words a file that could not be read: what it is ("the CA file
// ", or nothing for the file itself), its path and the system's cause,
// each once.
func readError(what, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot read %s%s: %v", what, path, err)
}

// fileChunkEnv names the plaintext chunk size of an upload, in bytes. It is
// for tests and measurements (many small chunks make a short file a long
// transfer; a larger chunk is fewer round trips): a fresh upload uses it,
// a resumed one keeps the chunk size it began with. Unset, it is
// engine.DefaultFileChunkSize.
const fileChunkEnv = "PARLEY_FILE_CHUNK_SIZE"

// fileChunkSize reads fileChunkEnv (0 when unset).
func fileChunkSize(env *cliEnv) (uint32, error) {
	v := env.getenv(fileChunkEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n < wire.MinFileChunkSize || n > wire.MaxFileChunkSize {
		return 0, usagef("%s=%q: want a number of bytes from %d to %d", fileChunkEnv, v, wire.MinFileChunkSize, wire.MaxFileChunkSize)
	}
	return uint32(n), nil
}

// fileError names a transfer's cause first (blob_expired, chunk_auth,
// file_digest...), as the contract wants of exit 1; a relay that cannot be
// reached and a full disk are worded by explain.
func fileError(err error) error {
	name := engine.ErrorName(err)
	if name == "error" || errors.Is(err, engine.ErrRelayUnreachable) || errors.Is(err, engine.ErrStorageFull) || errors.Is(err, syscall.ENOSPC) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// cmdFetch is "parley fetch SENDER ID [--to DIR]". A file fetched before
// is not pending any more: a second fetch says where it was saved.
func cmdFetch(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, true)
	f.network = true
	dir := f.String("to", ".", "save the file in this directory")
	ops, err := f.parse(env, args, 2, 2)
	if err != nil {
		return err
	}
	sender, err := parsePeer(ops[0])
	if err != nil {
		return err
	}
	idOp, err := parseIDOperand(ops[1])
	if err != nil {
		return err
	}
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		return usagef("--to %s is not a directory", *dir)
	}
	toSet := false
	f.Visit(func(fl *flag.Flag) { toSet = toSet || fl.Name == "to" })
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	out := printer{env.stdout, *f.json}
	id, err := idOp.resolve(ctx, "pending messages from "+sender.String(), pendingInboundIDs(p.Client, sender))
	if err == nil {
		var saved string
		if saved, err = p.Client.FetchFile(ctx, sender, id, *dir, nil); err == nil {
			out.record([]kv{{"saved", saved}, {"id", hexID(id)}})
			return nil
		}
		if errors.Is(err, engine.ErrBlobExpired) {
			return fmt.Errorf("blob_expired: the relay no longer holds file %s; it can only be discarded (\"parley discard %s %s\")", hexID(id), sender, hexID(id))
		}
		if !errors.Is(err, engine.ErrNotPending) {
			return fileError(err)
		}
	}
	// Not pending: fetched before, a message request, or nothing.
	dirs := []string{*dir}
	if !toSet {
		dirs = append(dirs, downloadsDir())
	}
	if rec, ferr := fetchedBefore(ctx, p, sender, idOp, dirs); rec != nil || ferr != nil {
		if ferr != nil {
			return ferr
		}
		out.record(rec)
		return nil
	}
	if idOp.full != nil {
		err = fmt.Errorf("no pending message %s from %s", hexID(*idOp.full), sender)
	}
	return requestHint(ctx, p, sender, err)
}

// fetchedBefore looks for a file from sender that was fetched and committed
// (its history entry) under the ID operand, and for where it was saved: a
// file of its name, or of a name a save gives when that one is taken
// ("notes (1).txt"), and of its size, in dirs. It returns the record a
// fetch prints (the newest such file), an error naming the file when none
// is there any more, or neither when no file was fetched under that ID.
func fetchedBefore(ctx context.Context, p *profile.Profile, sender engine.Address, idOp idOperand, dirs []string) ([]kv, error) {
	var entry *engine.HistoryEntry
	for before := int64(0); entry == nil; {
		page, err := p.Client.History(ctx, sender, before, 1000)
		if err != nil || len(page) == 0 {
			return nil, err
		}
		for i, e := range page {
			if e.Direction == engine.DirectionIn && idOp.matches(e.ID) {
				entry = &page[i]
				break
			}
		}
		before = page[len(page)-1].Seq
	}
	name, size, ok := engine.FileOfHistory(entry.Body)
	if !ok {
		return nil, fmt.Errorf("message %s from %s is not a file, and was committed on %s", hexID(entry.ID), sender, entry.At.Format(time.DateOnly))
	}
	var found string
	var newest time.Time
	ext := filepath.Ext(name)
	for _, dir := range dirs {
		for k := 0; k < maxSavedNames; k++ {
			path := filepath.Join(dir, name)
			if k > 0 {
				path = filepath.Join(dir, fmt.Sprintf("%s (%d)%s", strings.TrimSuffix(name, ext), k, ext))
			}
			fi, err := os.Stat(path)
			if err != nil {
				continue
			}
			if fi.Mode().IsRegular() && fi.Size() == size && fi.ModTime().After(newest) {
				found, newest = path, fi.ModTime()
			}
		}
	}
	if found == "" {
		return nil, fmt.Errorf("file %s from %s was fetched and committed on %s, and is not in %s under its name (saved elsewhere with --to, moved or deleted); its key is not kept, so it cannot be fetched again",
			textValue(name), sender, entry.At.Format(time.DateOnly), strings.Join(dirs, " or "))
	}
	return []kv{{"saved", found}, {"id", hexID(entry.ID)}, {"fetched_before", true}}, nil
}

// maxSavedNames bounds the names a fetch looks at for a file saved before:
// a save takes the first free one of "name", "name (1)", ... as the
// engine's does, which stops there too.
const maxSavedNames = 1000

// messageFields are a message's body fields, and for a file its "file"
// field (name, size and type) with an empty body: the manifest holds the
// file's key, which never goes to the terminal or a log.
func messageFields(content wire.ContentType, body []byte) []kv {
	if fields, ok := actionFields(content, body); ok {
		return fields
	}
	m, ok := engine.FileOf(content, body)
	if !ok {
		return bodyFields(body)
	}
	return []kv{{"body", ""}, {"body_b64", ""}, {"file", fileJSON{Name: m.Name, Size: m.Size, Type: m.MediaType}}}
}

// fileJSON is a file as sync --json and inbox show it.
type fileJSON struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Type string `json:"type"`
}

// String is the text form (key=value lines).
func (f fileJSON) String() string { return fmt.Sprintf("%q/%d/%s", f.Name, f.Size, f.Type) }

// fileTraceText is a file transfer's line under a trace.
func fileTraceText(fs engine.FileStatus) string {
	s := fmt.Sprintf("file %s: %d bytes, %s, blob %s, %d chunks of %d", wire.EscapeControls(fs.Name), fs.Size, fs.MediaType, fs.Blob, fs.Chunks, fs.ChunkSize)
	if fs.Direction == engine.DirectionIn {
		s += fmt.Sprintf(", %d fetched and verified", fs.Fetched)
	}
	return s
}

// fileTraceJSON is a file transfer in trace --json.
func fileTraceJSON(fs engine.FileStatus) map[string]any {
	m := map[string]any{"name": fs.Name, "size": fs.Size, "type": fs.MediaType, "blob": fs.Blob.String(),
		"chunks": fs.Chunks, "chunk_size": fs.ChunkSize}
	if fs.Direction == engine.DirectionIn {
		m["fetched"] = fs.Fetched
	}
	return m
}
