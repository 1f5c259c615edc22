package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

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
	chunk, err := fileChunkSize(env)
	if err != nil {
		return err
	}
	p, err := f.openWith(ctx, env, profile.Options{Maintain: f.network, Engine: engine.Config{Files: engine.FileConfig{ChunkSize: chunk}}})
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
		return fileError("send", err)
	}
	if *f.json {
		printer{env.stdout, true}.record([]kv{{"id", hexID(id)}, {"recipient", to}, {"accepted", err == nil}})
	} else {
		fmt.Fprintln(env.stdout, hexID(id))
	}
	if err != nil {
		return fmt.Errorf("file %s to %s stays pending: %w", hexID(id), to, err)
	}
	return nil
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
// file_digest...), as the contract wants of exit 1.
func fileError(verb string, err error) error {
	return fmt.Errorf("%s: %s: %w", engine.ErrorName(err), verb, err)
}

// cmdFetch is "parley fetch SENDER ID [--to DIR]".
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
	p, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeProfile(p)
	id, err := idOp.resolve(ctx, "pending messages from "+sender.String(), pendingInboundIDs(p.Client, sender))
	if err != nil {
		return err
	}
	saved, err := p.Client.FetchFile(ctx, sender, id, *dir, nil)
	if err != nil {
		if errors.Is(err, engine.ErrBlobExpired) {
			return fmt.Errorf("blob_expired: the relay no longer holds file %s; it can only be discarded (\"parley discard %s %s\")", hexID(id), sender, hexID(id))
		}
		return fileError("fetch", err)
	}
	printer{env.stdout, *f.json}.record([]kv{{"saved", saved}, {"id", hexID(id)}})
	return nil
}

// messageFields are a message's body fields, and for a file its "file"
// field (name, size and type) with an empty body: the manifest holds the
// file's key, which never goes to the terminal or a log.
func messageFields(content wire.ContentType, body []byte) []kv {
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
