package wire

import "encoding/binary"

// WebSocketPath is the HTTP path where a relay serves its websocket; a
// client dials the relay's URL with this path.
const WebSocketPath = "/v1/ws"

// AuthLabel is the domain tag that opens every relay authentication message,
// so that no signature made for another purpose verifies as one.
const AuthLabel = "parley/v1/relay-auth"

// AuthMessage returns the bytes a device signs with its identity's Ed25519
// key to answer a relay's Challenge:
//
//	"parley/v1/relay-auth" || nonce [32] || relay ID [32] ||
//	u8 len(address) || address || signing key [32] || expires i64 (big-endian)
//
// The nonce makes it single-use, the relay ID binds it to one relay, the
// address and the key bind it to one registration, and expires bounds it in
// time. The client signs these bytes and the relay verifies them, so both
// take them from here.
func AuthMessage(nonce, relayID [32]byte, address string, signingKey [32]byte, expires int64) []byte {
	m := make([]byte, 0, len(AuthLabel)+32+32+1+len(address)+32+8)
	m = append(m, AuthLabel...)
	m = append(m, nonce[:]...)
	m = append(m, relayID[:]...)
	m = append(m, byte(len(address)))
	m = append(m, address...)
	m = append(m, signingKey[:]...)
	return binary.BigEndian.AppendUint64(m, uint64(expires))
}
