package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/parley-chat/parley/wire"
)

// File transfer bounds.
const (
	// DefaultFileChunkSize is the plaintext chunk of an upload: the largest
	// (wire.MaxFileChunkSize, 255 KiB), so that its sealed chunk and the
	// put's header still fit one websocket message. The relay's puts are
	// not cut at chunks (an upload puts wire.MaxBlobChunk at a time, 4 in
	// flight, and the relay commits those that arrive together in one
	// write; a download fetches 512 KiB windows), so the chunk bounds what a
	// reader authenticates at once, not the transfer's rate.
	DefaultFileChunkSize = wire.MaxFileChunkSize
	// DefaultMaxFileSize is the largest file sent or fetched unless
	// FileConfig says otherwise: 256 MiB, a relay's default blob share per
	// IP, so that one file never needs more than a relay gives.
	DefaultMaxFileSize = 256 << 20
	// MaxConcurrentTransfers is how many uploads and downloads one client
	// runs at once; more wait. Each holds a chunk buffer and a share of the
	// relay connection, and the relay's quotas count per address.
	MaxConcurrentTransfers = 4
)

// File errors (the blob store's own are ErrBlob*, the stream's ErrChunk*).
var (
	// ErrFileNotFetched means a commit of a file message that was not
	// downloaded, verified and saved: only FetchFile commits a file.
	ErrFileNotFetched = errors.New("file not fetched: a file is committed by fetching it")
	// ErrNotAFile means a fetch named a pending message that is not a file.
	ErrNotAFile = errors.New("message is not a file")
	// ErrFileTooLarge means a file over the client's largest file size.
	ErrFileTooLarge = errors.New("file too large")
	// ErrNoBlobStore means the relay has no blob store (or FileConfig.Dir
	// is not set).
	ErrNoBlobStore = errors.New("relay has no blob store")
	// ErrFileChanged means the file being sent changed during its upload,
	// or since an interrupted upload of it began.
	ErrFileChanged = errors.New("file changed during upload")
)

// FileConfig configures file transfers.
type FileConfig struct {
	// Dir holds upload records and partial downloads (the profile's
	// files directory, 0700; files in it are 0600). Required for files.
	Dir string
	// ChunkSize is the plaintext chunk of uploads (DefaultFileChunkSize),
	// between wire.MinFileChunkSize and wire.MaxFileChunkSize.
	ChunkSize uint32
	// MaxSize is the largest file sent or fetched (DefaultMaxFileSize).
	MaxSize int64
	// Blobs is the blob store; by default the Relay, when it implements
	// BlobRelay.
	Blobs BlobRelay
}

// Progress reports a transfer's bytes done of total (plaintext).
type Progress func(done, total int64)

// transferSlots bounds concurrent transfers per client.
type transferSlots struct {
	once  sync.Once
	slots chan struct{}
}

func (c *Client) acquireTransfer(ctx context.Context) (func(), error) {
	c.transfers.once.Do(func() { c.transfers.slots = make(chan struct{}, MaxConcurrentTransfers) })
	select {
	case c.transfers.slots <- struct{}{}:
		return func() { <-c.transfers.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fileSetup returns the blob store, the files directory and the bounds.
func (c *Client) fileSetup() (BlobRelay, FileConfig, error) {
	fc := c.cfg.Files
	if fc.ChunkSize == 0 {
		fc.ChunkSize = DefaultFileChunkSize
	}
	if fc.MaxSize == 0 {
		fc.MaxSize = DefaultMaxFileSize
	}
	if fc.Blobs == nil {
		fc.Blobs = c.relay
	}
	if fc.Blobs == nil || fc.Dir == "" {
		return nil, fc, ErrNoBlobStore
	}
	if err := os.MkdirAll(fc.Dir, 0o700); err != nil {
		return nil, fc, fmt.Errorf("files directory: %w", err)
	}
	return fc.Blobs, fc, nil
}

// encodeManifestFrame encodes a file message's frame: a content frame
// whose body is the file's manifest.
func encodeManifestFrame(id wire.LogicalID, manifest []byte) ([]byte, error) {
	return wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: wire.ContentFile, Body: manifest})
}

// contentFrame decodes a received content frame as the application frame
// it is delivered as, and its content type.
func contentFrame(b []byte) (wire.Frame, wire.ContentType, error) {
	m, err := wire.DecodeContentMessage(b)
	if err != nil {
		return wire.Frame{}, 0, err
	}
	return wire.Frame{Kind: wire.FrameApplication, ID: m.ID, Body: m.Body}, m.Content, nil
}

// groupContent is the content type of a group message frame that
// DecodeGroupMessage accepted (text for anything else).
func groupContent(b []byte) wire.ContentType {
	if f, err := DecodeStoredFrame(b); err == nil && f.Content != 0 {
		return f.Content
	}
	return wire.ContentText
}

// FileOf returns the manifest of a file message's body (content
// wire.ContentFile), or false for anything else.
func FileOf(content wire.ContentType, body []byte) (wire.FileManifest, bool) {
	if content != wire.ContentFile {
		return wire.FileManifest{}, false
	}
	m, err := wire.DecodeManifest(body)
	return m, err == nil
}

// fileKey derives an upload's file key from the identity and a fresh salt.
func (c *Client) fileKey(salt []byte) ([32]byte, error) {
	var key [32]byte
	k, err := c.id.DeriveKey("parley file key v1", salt, len(key))
	copy(key[:], k)
	return key, err
}

// SendFile encrypts the file at path under a fresh key, uploads it to the
// relay's blob store chunk by chunk, then sends its manifest to peer as a
// message through the exactly-once path (Send's results: the logical ID,
// and *MessageNotSentError when the manifest stays pending). The manifest
// is stored pending first and handed off by the pump (sendManifestTo). The
// file is read as a stream and never copied.
//
// A killed upload resumes where the relay's copy ends when the same file
// is sent to the same peer again: an upload record (no secret in it) is
// written before the first chunk and removed once the manifest is stored
// pending, and the manifest's logical ID is chosen up front, so a resumed
// send never makes a second message. A file changed meanwhile fails with
// ErrFileChanged and starts afresh on the next send.
func (c *Client) SendFile(ctx context.Context, peer Address, path string, progress Progress) (wire.LogicalID, error) {
	return c.sendFile(ctx, fileTarget{
		key:  peer.String(),
		sent: func(id wire.LogicalID) bool { return c.alreadySent(ctx, peer, id) },
		send: func(id wire.LogicalID, body []byte) error {
			return c.sendManifestTo(ctx, peer, id, body)
		},
	}, path, progress)
}

// sendManifestTo stores a file's manifest to peer pending (Enqueue, under
// the ID chosen before the upload), then runs the pump for peer: nil when
// the relay accepted it, *MessageNotSentError when it stays pending (the
// pump or a retry sends it), any other error when nothing was stored. What
// Send refuses (a changed identity, an unregistered peer) is refused
// first, by CheckPeer. The store and the pump's pass are made under pumpMu,
// so that the pass that hands the manifest off is this one.
func (c *Client) sendManifestTo(ctx context.Context, peer Address, id wire.LogicalID, body []byte) error {
	if err := c.CheckPeer(ctx, peer); err != nil {
		return err
	}
	c.pumpMu.Lock()
	defer c.pumpMu.Unlock()
	res, err := c.Enqueue(ctx, []SendRequest{{Peer: peer, Body: body, file: true, id: &id}})
	if err != nil {
		return err
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	cause := c.pumpFor(ctx, id, []Address{peer})[0]
	var notSent *MessageNotSentError
	if cause == nil || errors.As(cause, &notSent) {
		return cause
	}
	return &MessageNotSentError{ID: id, Err: cause}
}

// SendGroupFile is SendFile to a group: one upload, and the manifest as a
// group message (content wire.ContentFile) on every member's lane. Members
// whose lane stays pending are in the result's error, as for SendGroup.
func (c *Client) SendGroupFile(ctx context.Context, group wire.GroupID, path string, progress Progress) (wire.LogicalID, error) {
	return c.sendFile(ctx, fileTarget{
		key: "group:" + hex.EncodeToString(group[:]),
		sent: func(id wire.LogicalID) bool {
			gs := c.store
			lanes, err := gs.Lanes(ctx, group, id)
			return err == nil && len(lanes) > 0
		},
		send: func(id wire.LogicalID, body []byte) error {
			res, err := c.sendGroup(ctx, group, &id, wire.ContentFile, body)
			if err != nil {
				return err
			}
			if len(res.Unsent) > 0 {
				return &MessageNotSentError{ID: id, Err: fmt.Errorf("%d lanes pending", len(res.Unsent))}
			}
			return nil
		},
	}, path, progress)
}

// fileTarget is where a file's manifest goes: a peer or a group.
type fileTarget struct {
	key  string // the upload record's recipient
	sent func(id wire.LogicalID) bool
	send func(id wire.LogicalID, body []byte) error // nil or *MessageNotSentError: stored
}

func (c *Client) sendFile(ctx context.Context, to fileTarget, path string, progress Progress) (wire.LogicalID, error) {
	blobs, fc, err := c.fileSetup()
	if err != nil {
		return wire.LogicalID{}, err
	}
	release, err := c.acquireTransfer(ctx)
	if err != nil {
		return wire.LogicalID{}, err
	}
	defer release()
	if path, err = filepath.Abs(path); err != nil {
		return wire.LogicalID{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return wire.LogicalID{}, fmt.Errorf("send file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return wire.LogicalID{}, fmt.Errorf("send file: %w", err)
	case !fi.Mode().IsRegular():
		return wire.LogicalID{}, fmt.Errorf("send file %s: not a regular file", path)
	case fi.Size() > fc.MaxSize:
		return wire.LogicalID{}, fmt.Errorf("send file %s of %d bytes (at most %d): %w", path, fi.Size(), fc.MaxSize, ErrFileTooLarge)
	}
	rec, err := c.findUpload(ctx, to.key, path)
	if err != nil {
		return wire.LogicalID{}, fmt.Errorf("send file: %w", err)
	}
	if rec != nil && (rec.Size != fi.Size() || rec.ModTime != fi.ModTime().UnixNano()) {
		// The file changed since its upload began: that upload is lost.
		if err := c.endUpload(ctx, rec); err != nil {
			return wire.LogicalID{}, err
		}
		return wire.LogicalID{}, fmt.Errorf("send file %s: %w", path, ErrFileChanged)
	}
	if rec == nil {
		if rec, err = c.newUpload(ctx, blobs, fc, to.key, path, fi); err != nil {
			return wire.LogicalID{}, err
		}
	}
	m, id, err := c.upload(ctx, blobs, f, rec, progress)
	if errors.Is(err, ErrBlobExpired) || errors.Is(err, ErrBlobNotFound) {
		// The relay let the unfinished blob go: start again next time.
		_ = c.endUpload(ctx, rec)
	}
	if err != nil {
		return wire.LogicalID{}, err
	}
	if after, err := f.Stat(); err != nil || after.Size() != fi.Size() || after.ModTime() != fi.ModTime() {
		_ = c.endUpload(ctx, rec)
		return wire.LogicalID{}, fmt.Errorf("send file %s: %w", path, ErrFileChanged)
	}
	return c.sendManifest(ctx, to, id, m, rec)
}

// newUpload reserves a blob and records the upload durably before its
// first chunk.
func (c *Client) newUpload(ctx context.Context, blobs BlobRelay, fc FileConfig, to string, path string, fi os.FileInfo) (*Upload, error) {
	rec := &Upload{To: to, Path: path, Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), ChunkSize: fc.ChunkSize, At: c.cfg.Now()}
	if _, err := c.cfg.Random.Read(rec.Salt[:]); err != nil {
		return nil, err
	}
	if _, err := c.cfg.Random.Read(rec.ID[:]); err != nil {
		return nil, err
	}
	chunks := wire.FileChunks(fi.Size(), fc.ChunkSize)
	blob, err := blobs.CreateBlob(ctx, fi.Size()+int64(chunks)*wire.FileTagSize)
	if err != nil {
		return nil, fmt.Errorf("send file: create blob: %w", err)
	}
	rec.Blob = blob
	if _, err := c.store.Apply(ctx, UploadBegin{Upload: *rec}); err != nil {
		return nil, fmt.Errorf("send file: record upload: %w", err)
	}
	return rec, c.fail("file-upload", "after-record")
}

// manifestOf rebuilds an upload's manifest (without its digest) from its
// record.
func (c *Client) manifestOf(rec *Upload) (wire.FileManifest, wire.LogicalID, error) {
	var m wire.FileManifest
	id := rec.ID
	m.Blob = rec.Blob
	key, err := c.fileKey(rec.Salt[:])
	if err != nil {
		return m, id, err
	}
	name := filepath.Base(rec.Path)
	media := mime.TypeByExtension(filepath.Ext(name))
	if media == "" || len(media) > wire.MaxMediaTypeSize {
		media = "application/octet-stream"
	}
	m = wire.FileManifest{Name: wire.CleanFileName(name), Size: rec.Size, MediaType: media,
		ChunkSize: rec.ChunkSize, Chunks: wire.FileChunks(rec.Size, rec.ChunkSize), Key: key, Blob: m.Blob}
	return m, id, nil
}

// uploadPuts is how many puts of wire.MaxBlobChunk one window of an upload
// holds: the relay client keeps them in flight together (the relay commits
// the puts that arrive together in one durable write), and the next window
// is read and sealed while one is put. Two windows of 1 MiB are what an
// upload holds in memory.
const uploadPuts = 4

// upload seals every chunk of f, hashing all of them, and puts the
// ciphertext the relay does not hold yet, a window at a time, while the next
// window is sealed; it returns the manifest with its digest. The relay holds
// the blob in puts of putSize; an interrupted upload resumes at what it
// holds, which is where a put ended.
func (c *Client) upload(ctx context.Context, blobs BlobRelay, f *os.File, rec *Upload, progress Progress) (wire.FileManifest, wire.LogicalID, error) {
	m, id, err := c.manifestOf(rec)
	if err != nil {
		return m, id, err
	}
	s, err := newFileStream(m)
	if err != nil {
		return m, id, err
	}
	held, size, err := blobs.BlobHeld(ctx, m.Blob)
	if err != nil {
		return m, id, fmt.Errorf("send file: blob %s: %w", m.Blob, err)
	}
	if size != m.CipherSize() {
		return m, id, fmt.Errorf("send file: blob %s of %d bytes, want %d: %w", m.Blob, size, m.CipherSize(), ErrBlobOffset)
	}
	put := putSize(m, held)
	span := put // a window: one PutBlob
	if put == wire.MaxBlobChunk {
		span *= uploadPuts
	}
	// The putter puts each full window and hands its buffer back.
	type window struct {
		off  int64
		data []byte
		done int64 // plaintext bytes sealed once it is put
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	full := make(chan window, 1)
	free := make(chan []byte, 2)
	free <- make([]byte, 0, span)
	free <- make([]byte, 0, span)
	putErr := make(chan error, 1)
	go func() {
		for w := range full {
			err := c.fail("file-upload", "before-chunk")
			if err == nil {
				if err = blobs.PutBlob(ctx, m.Blob, w.off, w.data); err != nil {
					err = fmt.Errorf("send file: put at %d: %w", w.off, err)
				}
			}
			if err == nil {
				err = c.fail("file-upload", "after-chunk")
			}
			if err != nil {
				putErr <- err
				cancel()
				for range full {
				}
				return
			}
			if progress != nil {
				progress(w.done, m.Size)
			}
			free <- w.data[:0]
		}
		putErr <- nil
	}()
	// send hands the window to the putter; false when it failed.
	send := func(w window) bool {
		select {
		case full <- w:
			return true
		case <-ctx.Done():
			return false
		}
	}
	sealErr := func() error {
		defer close(full)
		h := sha256.New()
		plain := make([]byte, m.ChunkSize)
		ct := make([]byte, 0, int(m.ChunkSize)+wire.FileTagSize)
		var buf []byte
		at, pos := held, int64(0) // the window's offset; the ciphertext's end so far
		var done int64
		for i := uint32(0); i < m.Chunks; i++ {
			n := m.ChunkPlainSize(i)
			if _, err := io.ReadFull(f, plain[:n]); err != nil {
				return fmt.Errorf("send file %s: %w (%w)", rec.Path, ErrFileChanged, err)
			}
			ct = s.seal(ct[:0], i, plain[:n])
			h.Write(ct)
			done += int64(n)
			rest := ct
			if pos < held {
				rest = rest[min(held-pos, int64(len(rest))):] // the relay holds the part before held
			}
			pos += int64(len(ct))
			for len(rest) > 0 {
				if buf == nil {
					select {
					case buf = <-free:
					case <-ctx.Done():
						return nil
					}
				}
				k := min(len(rest), int(span)-len(buf))
				buf, rest = append(buf, rest[:k]...), rest[k:]
				if int64(len(buf)) == span || pos == m.CipherSize() && len(rest) == 0 {
					if !send(window{off: at, data: buf, done: done}) {
						return nil
					}
					at += int64(len(buf))
					buf = nil
				}
			}
		}
		copy(m.Digest[:], h.Sum(nil))
		return nil
	}()
	if err := <-putErr; err != nil {
		return m, id, err
	}
	if sealErr != nil {
		return m, id, sealErr
	}
	return m, id, nil
}

// putSize is the size of every put of an upload but the last, the blob's
// chunk to the relay (BlobLimits' chunk rule): wire.MaxBlobChunk, cut
// through sealed chunks as it falls, for an upload begun by this build. An
// upload an earlier build began goes on in that build's puts, which what
// the relay holds tells apart: as many sealed chunks as make
// wire.MinBlobChunk, or one.
func putSize(m wire.FileManifest, held int64) int64 {
	if held == 0 || held >= m.CipherSize() || held%wire.MaxBlobChunk == 0 {
		return wire.MaxBlobChunk
	}
	sealed := int64(m.ChunkSize) + wire.FileTagSize
	per := max(1, (wire.MinBlobChunk+sealed-1)/sealed)
	if held%(per*sealed) == 0 {
		return per * sealed
	}
	return sealed
}

// sendManifest stores and sends the manifest of a complete upload (unless
// an earlier, killed run already stored it), then forgets the upload.
func (c *Client) sendManifest(ctx context.Context, to fileTarget, id wire.LogicalID, m wire.FileManifest, rec *Upload) (wire.LogicalID, error) {
	body, err := wire.EncodeManifest(m)
	if err != nil {
		return id, err
	}
	if err := c.fail("file-upload", "before-manifest"); err != nil {
		return id, err
	}
	var sendErr error
	if !to.sent(id) {
		var mns *MessageNotSentError
		if sendErr = to.send(id, body); sendErr != nil && !errors.As(sendErr, &mns) {
			return id, sendErr // nothing stored: the record stays for a resend
		}
	}
	if err := c.fail("file-upload", "after-manifest"); err != nil {
		return id, err
	}
	if err := c.endUpload(ctx, rec); err != nil {
		return id, err
	}
	return id, sendErr
}

// alreadySent reports whether the message id to peer was stored: pending,
// or in the history.
func (c *Client) alreadySent(ctx context.Context, peer Address, id wire.LogicalID) bool {
	if _, err := c.store.Outbound(ctx, peer, id); err == nil {
		return true
	}
	_, ok, err := c.store.HistoryEntry(ctx, peer, DirectionOut, id)
	return err == nil && ok
}

// fileHistoryBody is what the history keeps of a fetched file: its name,
// size and type, not the manifest (whose key would outlive the transfer).
func fileHistoryBody(m wire.FileManifest) []byte {
	return []byte(fmt.Sprintf("[file] %s (%d bytes, %s)", m.Name, m.Size, m.MediaType))
}

// FileOfHistory reads back the name and size of a file from its history
// body (fileHistoryBody). A text message may look the same: the caller
// reads it as a file's only where a file is meant (a fetch of a message no
// longer pending). The name is one a file could have been saved under
// (wire.CleanFileName).
func FileOfHistory(body []byte) (name string, size int64, ok bool) {
	s, found := strings.CutPrefix(string(body), "[file] ")
	if !found || !strings.HasSuffix(s, ")") {
		return "", 0, false
	}
	// The media type holds no " bytes, " of its own; the name may.
	i := strings.LastIndex(s, " bytes, ")
	j := strings.LastIndex(s[:max(i, 0)], " (")
	if i < 0 || j < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(s[j+2:i], 10, 64)
	name = s[:j]
	if err != nil || n < 0 || name == "" || wire.CleanFileName(name) != name {
		return "", 0, false
	}
	return name, n, true
}
