package wire

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FrameContent is a one-to-one application message whose body is not text:
// kind 1's layout with a content type byte after the ID. Kind 1 stays text
// (its format and vectors are frozen, and its body may be any bytes, so no
// prefix inside it could say "file"); a group message carries the same
// content types in its own content byte.
const FrameContent FrameKind = 6

// ContentFile is a file manifest (FileManifest): the body of a content
// frame or of a group message.
const ContentFile ContentType = 2

// ContentMessage is a one-to-one message with a content type (FrameContent).
// Content is ContentFile or an action (action.go): text travels as kind 1,
// so that each message has one encoding.
type ContentMessage struct {
	ID      LogicalID
	Content ContentType
	Body    []byte
}

const contentHeaderSize = 1 + 1 + 16 + 1 + 4

// EncodeContentMessage returns a content frame's bytes. A body over
// MaxGroupBodySize fails with ErrMessageTooLarge (a content frame is never
// larger than a group message); a content type other than ContentFile or an
// action (IsAction) with ErrMalformed.
func EncodeContentMessage(m ContentMessage) ([]byte, error) {
	if m.Content != ContentFile && !IsAction(m.Content) {
		return nil, fmt.Errorf("content type %d: %w", m.Content, ErrMalformed)
	}
	if len(m.Body) > MaxGroupBodySize {
		return nil, ErrMessageTooLarge
	}
	b := make([]byte, 0, contentHeaderSize+len(m.Body))
	b = append(b, FrameVersion, byte(FrameContent))
	b = append(b, m.ID[:]...)
	b = append(b, byte(m.Content))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Body)))
	return append(b, m.Body...), nil
}

// DecodeContentMessage parses a content frame, rejecting as DecodeFrame
// does: input over MaxFrameSize, another version, another kind, a content
// type other than ContentFile or an action, a length over MaxGroupBodySize, truncation or
// trailing bytes. The body is a copy.
func DecodeContentMessage(b []byte) (ContentMessage, error) {
	r, err := groupReader(b, FrameContent, MaxFrameSize)
	if err != nil {
		return ContentMessage{}, err
	}
	var m ContentMessage
	r.array(m.ID[:], "id")
	m.Content = ContentType(r.u8("content type"))
	if r.err == nil && m.Content != ContentFile && !IsAction(m.Content) {
		r.fail(fmt.Errorf("content type %d: %w", m.Content, ErrMalformed))
	}
	body := r.sized("body", 0, MaxGroupBodySize)
	if err := r.end(); err != nil {
		return ContentMessage{}, err
	}
	m.Body = append(make([]byte, 0, len(body)), body...)
	return m, nil
}

// File manifest limits.
const (
	// ManifestVersion is the only manifest format.
	ManifestVersion = 0x01
	// MinFileChunkSize is the smallest chunk: below it the 16-byte tag of
	// every chunk would outweigh the data.
	MinFileChunkSize = 1024
	// MaxFileChunkSize is the largest plaintext chunk: its ciphertext (plus
	// a 16-byte tag) and a blob write's header (at most 1 KiB) fit the
	// relay's websocket read limit of 256 KiB plus 192 bytes.
	MaxFileChunkSize = 256*1024 - 1024
	// MaxManifestFileSize is the largest size a manifest may name (1 TiB):
	// a sanity bound on the format; clients hold files to a much smaller
	// limit of their own.
	MaxManifestFileSize = 1 << 40
	// MaxFileNameSize is the longest file name in bytes of UTF-8.
	MaxFileNameSize = 255
	// MaxMediaTypeSize is the longest media type in bytes.
	MaxMediaTypeSize = 127
	// FileTagSize is the size of each chunk's authentication tag.
	FileTagSize = 16
)

// FileManifest says how to fetch and open a file sent through the relay's
// blob store: its name, plaintext size and media type, how it was cut into
// chunks, the key of its streaming AEAD, the blob that holds the ciphertext
// and the SHA-256 digest of that whole ciphertext.
type FileManifest struct {
	Name      string
	Size      int64
	MediaType string
	ChunkSize uint32
	Chunks    uint32
	Key       [32]byte
	Blob      BlobID
	Digest    [32]byte
}

// FileChunks returns how many chunks a file of size bytes has with chunks
// of chunkSize: at least one (an empty file is one empty chunk, so that the
// last-chunk flag always seals something).
func FileChunks(size int64, chunkSize uint32) uint32 {
	if size <= 0 {
		return 1
	}
	return uint32((size + int64(chunkSize) - 1) / int64(chunkSize))
}

// CipherSize is the size of the blob that holds the ciphertext: the
// plaintext and one tag per chunk.
func (m FileManifest) CipherSize() int64 { return m.Size + int64(m.Chunks)*FileTagSize }

// ChunkPlainSize is the plaintext size of chunk i.
func (m FileManifest) ChunkPlainSize(i uint32) int {
	if i+1 < m.Chunks {
		return int(m.ChunkSize)
	}
	return int(m.Size - int64(m.Chunks-1)*int64(m.ChunkSize))
}

// CleanFileName makes a name safe to show and to save under: control
// characters, path separators and other non-printing runes become '_',
// invalid UTF-8 too, leading dots are dropped (no hidden files, no ".."),
// and it is cut to MaxFileNameSize bytes. A name left empty becomes "file".
func CleanFileName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(name, "_") {
		switch {
		case r == '/' || r == '\\' || r == ':' || !unicode.IsPrint(r):
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	s := strings.TrimLeft(strings.TrimSpace(b.String()), ".")
	for len(s) > MaxFileNameSize {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	if s == "" {
		return "file"
	}
	return s
}

// checkManifest checks what the encoder and the decoder both require: a
// clean name, a printable ASCII media type, a size and chunking in range
// and a chunk count that matches them.
func checkManifest(m FileManifest) error {
	switch {
	case CleanFileName(m.Name) != m.Name:
		return fmt.Errorf("file name %q: %w", m.Name, ErrMalformed)
	case len(m.MediaType) > MaxMediaTypeSize:
		return fmt.Errorf("media type of %d bytes: %w", len(m.MediaType), ErrMalformed)
	case m.Size < 0 || m.Size > MaxManifestFileSize:
		return fmt.Errorf("file size %d: %w", m.Size, ErrMalformed)
	case m.ChunkSize < MinFileChunkSize || m.ChunkSize > MaxFileChunkSize:
		return fmt.Errorf("chunk size %d: %w", m.ChunkSize, ErrMalformed)
	case m.Chunks != FileChunks(m.Size, m.ChunkSize):
		return fmt.Errorf("%d chunks for %d bytes in chunks of %d: %w", m.Chunks, m.Size, m.ChunkSize, ErrMalformed)
	}
	for i := 0; i < len(m.MediaType); i++ {
		if c := m.MediaType[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("media type byte %#x: %w", c, ErrMalformed)
		}
	}
	return nil
}

// EncodeManifest returns a manifest's bytes: version, size, chunk size,
// chunk count, key, blob ID, digest, then the name and the media type each
// with a one-byte length. A name that CleanFileName would change, a media
// type that is not printable ASCII, or sizes out of range fail with
// ErrMalformed.
func EncodeManifest(m FileManifest) ([]byte, error) {
	if err := checkManifest(m); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 1+8+4+4+32+16+32+1+len(m.Name)+1+len(m.MediaType))
	b = append(b, ManifestVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Size))
	b = binary.BigEndian.AppendUint32(b, m.ChunkSize)
	b = binary.BigEndian.AppendUint32(b, m.Chunks)
	b = append(b, m.Key[:]...)
	b = append(b, m.Blob[:]...)
	b = append(b, m.Digest[:]...)
	b = append(append(b, byte(len(m.Name))), m.Name...)
	b = append(append(b, byte(len(m.MediaType))), m.MediaType...)
	return b, nil
}

// DecodeManifest parses a manifest strictly: another version is
// ErrUnsupportedVersion; truncation, trailing bytes, a name that is not
// clean, a bad media type, sizes out of range or a chunk count that does not
// match are ErrMalformed.
func DecodeManifest(b []byte) (FileManifest, error) {
	r := &reader{b: b}
	r.version(ManifestVersion)
	var m FileManifest
	size := r.u64("size")
	m.ChunkSize = r.u32("chunk size")
	m.Chunks = r.u32("chunks")
	r.array(m.Key[:], "key")
	r.array(m.Blob[:], "blob")
	r.array(m.Digest[:], "digest")
	name := r.sized8("name", MaxFileNameSize)
	media := r.sized8("media type", MaxMediaTypeSize)
	if err := r.end(); err != nil {
		return FileManifest{}, err
	}
	if size > MaxManifestFileSize {
		return FileManifest{}, fmt.Errorf("file size %d: %w", size, ErrMalformed)
	}
	m.Size, m.Name, m.MediaType = int64(size), string(name), string(media)
	if err := checkManifest(m); err != nil {
		return FileManifest{}, err
	}
	return m, nil
}

// sized8 reads a u8 length of at most hi and then that many bytes, without
// copying them.
func (r *reader) sized8(field string, hi int) []byte {
	n := int(r.u8(field + " length"))
	if r.err == nil && n > hi {
		r.fail(fmt.Errorf("%s length %d over %d: %w", field, n, hi, ErrMalformed))
		return nil
	}
	return r.take(n, field)
}
