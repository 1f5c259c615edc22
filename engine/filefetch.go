package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-chat/parley/wire"
)

// partialPath is where the ciphertext of a download in progress waits: a
// 0600 file in the files directory named by a digest of the sender and the
// message, holding the chunks verified so far, in order. The file key lives
// only in the sealed manifest, so the partial download is sealed at rest.
func partialPath(dir string, sender Address, id wire.LogicalID) string {
	h := sha256.Sum256(append([]byte(sender.String()+"\x00"), id[:]...))
	return filepath.Join(dir, "fetch-"+hex.EncodeToString(h[:16])+".part")
}

// FetchFile downloads the file of a pending file message from sender,
// verifies every chunk as it arrives and the whole ciphertext's digest,
// decrypts it into dir, and commits the message; it returns the saved
// file's path. Nothing appears in dir before the digest verified: where the
// system has files without a name (Linux's O_TMPFILE) the plaintext is
// written into one in dir as the chunks authenticate, else under a
// temporary name in dir once the download is complete; either is linked to
// its own name (or "name (N).ext" when that is taken) once complete.
//
// Verified chunks are kept, fsynced one by one, in the profile's files
// directory, so a killed or failed fetch resumes at the last durable
// chunk. A chunk that fails (ErrChunkAuth, ErrChunkSize: a corrupting
// relay) is never kept; the fetch can be retried. A blob that expired fails
// with ErrBlobExpired and its partial download is removed: the message can
// then only be discarded.
func (c *Client) FetchFile(ctx context.Context, sender Address, id wire.LogicalID, dir string, progress Progress) (string, error) {
	blobs, fc, err := c.fileSetup()
	if err != nil {
		return "", err
	}
	_, m, err := c.PendingFile(ctx, sender, id)
	if err != nil {
		return "", fmt.Errorf("fetch: %w", err)
	}
	if m.Size > fc.MaxSize {
		return "", fmt.Errorf("fetch %s of %d bytes (at most %d): %w", m.Name, m.Size, fc.MaxSize, ErrFileTooLarge)
	}
	release, err := c.acquireTransfer(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	part := partialPath(fc.Dir, sender, id)
	var out *plainOut
	if f, ok := openUnnamed(dir); ok {
		out = &plainOut{f: f, h: sha256.New()}
		defer f.Close()
	}
	if err := c.download(ctx, blobs, m, part, out, progress); err != nil {
		if errors.Is(err, ErrBlobExpired) || errors.Is(err, ErrFileDigest) {
			_ = removeDurable(part)
		}
		return "", fmt.Errorf("fetch %s: %w", m.Name, err)
	}
	var saved string
	if out != nil {
		saved, err = out.save(m, dir)
	} else {
		saved, err = saveFile(m, part, dir)
	}
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", m.Name, err)
	}
	if err := c.fail("file-fetch", "before-commit"); err != nil {
		return saved, err
	}
	res, err := c.finalizeBatch(ctx, []FinalizeRequest{{Sender: sender, ID: id, Outcome: OutcomeCommitted, fetched: true}}, nil, false)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return saved, fmt.Errorf("fetch %s: saved as %s but not committed: %w", m.Name, saved, err)
	}
	return saved, removeDurable(part)
}

// DropPartial removes what a fetch of the message kept; a discard of a
// file does it.
func (c *Client) DropPartial(sender Address, id wire.LogicalID) error {
	if c.cfg.Files.Dir == "" {
		return nil
	}
	return removeDurable(partialPath(c.cfg.Files.Dir, sender, id))
}

// chunkCipherSize is chunk i's ciphertext size.
func chunkCipherSize(m wire.FileManifest, i uint32) int {
	return m.ChunkPlainSize(i) + wire.FileTagSize
}

// fetchWindow is how much ciphertext a download asks for at once (whole
// chunks, at least one): the relay client keeps the window's gets in
// flight together (2 of wire.MaxBlobChunk), the next window is fetched
// while one is verified and appended, and a window's chunks are made
// durable with one fsync. Two windows are what a download holds in memory;
// a kill loses at most the window in flight.
const fetchWindow = 512 << 10

// download completes the partial ciphertext at part: it keeps the whole
// chunks already there that authenticate, fetches the rest a window at a
// time (the next while one is kept), appends each chunk only once it
// authenticated, syncs the file once per window, and checks the digest of
// the whole at the end (taken as it goes). A kill loses nothing appended;
// a power loss at most the window being synced, whose chunks then fail to
// authenticate at the next fetch and are fetched again. The plaintext of
// every chunk kept, the ones already there and each new one, goes to out in
// order (when out is not nil).
func (c *Client) download(ctx context.Context, blobs BlobRelay, m wire.FileManifest, part string, out *plainOut, progress Progress) error {
	s, err := newFileStream(m)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// Whole chunks that authenticate: a chunk cut by a kill, or not yet on
	// the disk at a power loss, is fetched again. The digest is taken as
	// the chunks are kept: the kept ones read once here, each new one as
	// it is appended, so the ciphertext is never read back whole.
	h := sha256.New()
	plain := make([]byte, 0, m.ChunkSize)
	ct := make([]byte, int(m.ChunkSize)+wire.FileTagSize)
	done := uint32(0)
	r := io.NewSectionReader(f, 0, fi.Size())
	for ; done < m.Chunks && chunkOffset(m, done)+int64(chunkCipherSize(m, done)) <= fi.Size(); done++ {
		n := chunkCipherSize(m, done)
		if _, err := io.ReadFull(r, ct[:n]); err != nil {
			return err
		}
		p, err := s.open(plain[:0], done, ct[:n])
		if err != nil {
			break
		}
		if err := out.write(p); err != nil {
			return err
		}
		h.Write(ct[:n])
	}
	keep := chunkOffset(m, done)
	if done == m.Chunks {
		keep = m.CipherSize() // the last chunk is shorter than a stride
	}
	if err := f.Truncate(keep); err != nil {
		return err
	}
	per := uint32(max(1, fetchWindow/(int(m.ChunkSize)+wire.FileTagSize)))
	// The fetcher gets each window, the next while this goroutine keeps
	// the one before.
	type window struct {
		first, end uint32 // its chunks, end excluded
		data       []byte
		err        error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan window, 1)
	go func() {
		defer close(got)
		for first := done; first < m.Chunks; first += per {
			last := min(first+per, m.Chunks) - 1
			off := chunkOffset(m, first)
			n := int(chunkOffset(m, last) + int64(chunkCipherSize(m, last)) - off)
			w := window{first: first, end: last + 1}
			if w.err = c.fail("file-fetch", "before-chunk"); w.err == nil {
				if w.data, w.err = blobs.GetBlob(ctx, m.Blob, off, n); w.err != nil {
					w.err = fmt.Errorf("chunk %d: %w", first, w.err)
				}
			}
			select {
			case got <- w:
			case <-ctx.Done():
				return
			}
			if w.err != nil {
				return
			}
		}
	}()
	for w := range got {
		if w.err != nil {
			return w.err
		}
		data := w.data
		i := w.first
		for ; len(data) > 0 && i < w.end; i++ {
			n := chunkCipherSize(m, i)
			if len(data) < n {
				return &ChunkError{Index: i, Err: ErrChunkSize}
			}
			p, err := s.open(plain[:0], i, data[:n])
			if err != nil {
				return err
			}
			if _, err := f.WriteAt(data[:n], chunkOffset(m, i)); err != nil {
				return err
			}
			if err := out.write(p); err != nil {
				return err
			}
			h.Write(data[:n])
			data = data[n:]
			if err := c.fail("file-fetch", "after-chunk"); err != nil {
				return err
			}
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if i < w.end || len(data) > 0 {
			// The relay served less than the window, or more: the chunks
			// that authenticated are kept (synced above).
			return &ChunkError{Index: i, Err: ErrChunkSize}
		}
		if progress != nil {
			progress(int64(i-1)*int64(m.ChunkSize)+int64(m.ChunkPlainSize(i-1)), m.Size)
		}
	}
	if !bytes.Equal(h.Sum(nil), m.Digest[:]) {
		return ErrFileDigest
	}
	return nil
}

// saveFile decrypts the verified ciphertext at part into dir under a
// temporary name, then gives it the manifest's name (or the first free
// "name (N).ext"). A file already there with the same contents is a save
// from a fetch killed before its commit: it is used again, not copied.
func saveFile(m wire.FileManifest, part, dir string) (string, error) {
	s, err := newFileStream(m)
	if err != nil {
		return "", err
	}
	src, err := os.Open(part)
	if err != nil {
		return "", err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".parley-fetch-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	ct := make([]byte, int(m.ChunkSize)+wire.FileTagSize)
	plain := make([]byte, 0, m.ChunkSize)
	for i := uint32(0); i < m.Chunks; i++ {
		n := chunkCipherSize(m, i)
		if _, err := io.ReadFull(src, ct[:n]); err != nil {
			return "", &ChunkError{Index: i, Err: ErrChunkSize}
		}
		p, err := s.open(plain[:0], i, ct[:n])
		if err != nil {
			return "", err
		}
		h.Write(p)
		if _, err := tmp.Write(p); err != nil {
			return "", err
		}
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	return nameFile(m, dir, h.Sum(nil), func(dst string) error { return os.Link(tmp.Name(), dst) })
}

// nameFile gives the complete plaintext, whose SHA-256 is sum, the
// manifest's name in dir through link, or the first free "name (N).ext"; a
// file already there with the same contents is a save from a fetch killed
// before its commit, used again rather than copied.
func nameFile(m wire.FileManifest, dir string, sum []byte, link func(dst string) error) (string, error) {
	ext := filepath.Ext(m.Name)
	stem := strings.TrimSuffix(m.Name, ext)
	for k := 0; k < 1000; k++ {
		name := m.Name
		if k > 0 {
			name = fmt.Sprintf("%s (%d)%s", stem, k, ext)
		}
		dst := filepath.Join(dir, name)
		err := link(dst)
		if err == nil {
			return dst, syncDir(dir)
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if same, _ := sameContents(dst, m.Size, sum); same {
			return dst, nil
		}
	}
	return "", fmt.Errorf("no free name for %s in %s", m.Name, dir)
}

// plainOut is the plaintext of a download, written as its chunks
// authenticate into a file without a name in the destination (openUnnamed),
// with its SHA-256 and length taken as it goes. It saves the reading back
// and the second decryption of the partial download that saveFile does.
type plainOut struct {
	f *os.File
	h hash.Hash
	n int64
}

// write appends p; on a nil plainOut it does nothing.
func (o *plainOut) write(p []byte) error {
	if o == nil {
		return nil
	}
	o.h.Write(p)
	n, err := o.f.Write(p)
	o.n += int64(n)
	return err
}

// save makes the complete plaintext durable and names it in dir.
func (o *plainOut) save(m wire.FileManifest, dir string) (string, error) {
	if o.n != m.Size {
		return "", fmt.Errorf("the plaintext written is %d bytes, the manifest says %d", o.n, m.Size)
	}
	if err := o.f.Sync(); err != nil {
		return "", err
	}
	return nameFile(m, dir, o.h.Sum(nil), func(dst string) error { return linkUnnamed(o.f, dst) })
}

// sameContents reports whether the file at path has size bytes with this
// SHA-256.
func sameContents(path string, size int64, sum []byte) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != size || !fi.Mode().IsRegular() {
		return false, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return bytes.Equal(h.Sum(nil), sum), nil
}

// PendingFile returns a pending received file message and its manifest
// (ErrNotPending when there is none, ErrNotAFile when it is not a file).
func (c *Client) PendingFile(ctx context.Context, sender Address, id wire.LogicalID) (InboundMessage, wire.FileManifest, error) {
	msg, err := c.store.Inbound(ctx, sender, id)
	if err != nil {
		return msg, wire.FileManifest{}, fmt.Errorf("file %x from %s: %w", id[:], sender, err)
	}
	m, ok := FileOf(msg.Content, msg.Body)
	if !ok {
		return msg, m, fmt.Errorf("file %x from %s: %w", id[:], sender, ErrNotAFile)
	}
	return msg, m, nil
}

// FileStatus is a file message's transfer as a trace shows it: its
// manifest (key left out), and for a received file how many chunks the
// partial download holds.
type FileStatus struct {
	Name, MediaType string
	Size            int64
	ChunkSize       uint32
	Chunks          uint32
	Blob            wire.BlobID
	Direction       Direction
	// Fetched is the chunks verified and kept so far (received files).
	Fetched uint32
}

// FileTransfer returns the status of the pending file message id received
// from or sent to peer; false when there is none.
func (c *Client) FileTransfer(ctx context.Context, peer Address, id wire.LogicalID) (FileStatus, bool, error) {
	var m wire.FileManifest
	var st FileStatus
	if in, err := c.store.Inbound(ctx, peer, id); err == nil {
		mf, ok := FileOf(in.Content, in.Body)
		if !ok {
			return st, false, nil
		}
		m, st.Direction = mf, DirectionIn
		if dir := c.cfg.Files.Dir; dir != "" {
			if fi, err := os.Stat(partialPath(dir, peer, id)); err == nil {
				for st.Fetched < m.Chunks && chunkOffset(m, st.Fetched)+int64(chunkCipherSize(m, st.Fetched)) <= fi.Size() {
					st.Fetched++
				}
			}
		}
	} else if !errors.Is(err, ErrNotPending) {
		return st, false, err
	} else if out, err := c.store.Outbound(ctx, peer, id); err == nil {
		mf, ok := FileOf(out.Content, out.Body)
		if !ok {
			return st, false, nil
		}
		m, st.Direction = mf, DirectionOut
	} else if errors.Is(err, ErrNotPending) {
		return st, false, nil
	} else {
		return st, false, err
	}
	st.Name, st.MediaType, st.Size, st.ChunkSize, st.Chunks, st.Blob = m.Name, m.MediaType, m.Size, m.ChunkSize, m.Chunks, m.Blob
	return st, true, nil
}

// syncDir makes a directory's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// removeDurable removes a file and makes the removal durable.
func removeDurable(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(path))
}
