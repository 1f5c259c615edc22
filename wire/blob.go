package wire

import "encoding/hex"

// BlobID names a blob in the relay's blob store: 16 random bytes the relay
// chooses, unguessable, so that only those who were told it can read it.
type BlobID [16]byte

// String returns the ID as 32 lowercase hex digits.
func (id BlobID) String() string { return hex.EncodeToString(id[:]) }
