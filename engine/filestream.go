package engine

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/parley-chat/parley/wire"
)

// A file's ciphertext is its chunks, each sealed on its own with
// ChaCha20-Poly1305 under the file's key, with the nonce made of the chunk's
// index (11 bytes, big-endian) and a last-chunk flag (1 on the last chunk,
// 0 before), as age's STREAM does. A chunk moved to another index, a chunk
// of another file, a stream cut at a chunk boundary (its new last chunk was
// sealed with the flag 0) or extended past its last chunk all fail to open.
// Each key seals one file, so nonces never repeat.

// File stream errors, matched with errors.Is (a *ChunkError wraps them).
var (
	// ErrChunkAuth means a chunk failed to authenticate at its index: it was
	// altered, moved, swapped, belongs to another file, or the stream was
	// cut or extended. It says nothing more on purpose.
	ErrChunkAuth = errors.New("file chunk failed to authenticate")
	// ErrChunkSize means a chunk's ciphertext is not the size the manifest
	// gives for its index (a truncated or padded blob).
	ErrChunkSize = errors.New("file chunk has the wrong size")
	// ErrFileDigest means the whole ciphertext's SHA-256 is not the
	// manifest's digest.
	ErrFileDigest = errors.New("file digest mismatch")
)

// ChunkError is a chunk of a file that failed: its index and the cause
// (ErrChunkAuth or ErrChunkSize).
type ChunkError struct {
	Index uint32
	Err   error
}

// Error implements error.
func (e *ChunkError) Error() string { return fmt.Sprintf("chunk %d: %v", e.Index, e.Err) }

// Unwrap returns the cause.
func (e *ChunkError) Unwrap() error { return e.Err }

// fileStream seals and opens the chunks of one file.
type fileStream struct {
	aead cipher.AEAD
	m    wire.FileManifest
}

func newFileStream(m wire.FileManifest) (*fileStream, error) {
	aead, err := chacha20poly1305.New(m.Key[:])
	if err != nil {
		return nil, fmt.Errorf("file stream: %w", err)
	}
	return &fileStream{aead: aead, m: m}, nil
}

// streamNonce is the nonce of chunk i: the index in 11 bytes, then the
// last-chunk flag.
func streamNonce(i uint32, last bool) []byte {
	n := make([]byte, chacha20poly1305.NonceSize)
	binary.BigEndian.PutUint32(n[7:11], i)
	if last {
		n[11] = 1
	}
	return n
}

// chunkOffset is where chunk i's ciphertext starts in the blob.
func chunkOffset(m wire.FileManifest, i uint32) int64 {
	return int64(i) * (int64(m.ChunkSize) + wire.FileTagSize)
}

// seal appends chunk i's ciphertext to dst. plain must be the chunk's
// plaintext size (a programmer error otherwise).
func (s *fileStream) seal(dst []byte, i uint32, plain []byte) []byte {
	if len(plain) != s.m.ChunkPlainSize(i) {
		panic(fmt.Sprintf("engine: chunk %d of %d bytes, want %d", i, len(plain), s.m.ChunkPlainSize(i)))
	}
	return s.aead.Seal(dst, streamNonce(i, i+1 == s.m.Chunks), plain, nil)
}

// open appends chunk i's plaintext to dst, or fails with a *ChunkError.
func (s *fileStream) open(dst []byte, i uint32, ct []byte) ([]byte, error) {
	if i >= s.m.Chunks || len(ct) != s.m.ChunkPlainSize(i)+wire.FileTagSize {
		return nil, &ChunkError{Index: i, Err: ErrChunkSize}
	}
	out, err := s.aead.Open(dst, streamNonce(i, i+1 == s.m.Chunks), ct, nil)
	if err != nil {
		return nil, &ChunkError{Index: i, Err: ErrChunkAuth}
	}
	return out, nil
}
