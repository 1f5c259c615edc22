// Package wire owns every byte format parley puts on the wire or inside an
// encryption: the reliability frame, the outer envelope, the ratchet message
// and the PreKeyMessage initiation header, the prekey bundle, the relay
// protocol's messages, and the message a device signs to authenticate to a
// relay (AuthMessage, served at WebSocketPath), which the client and the
// relay server both take from here. docs/wire-format.md documents each
// layout; frozen vectors in testdata/ pin them.
//
// wire is pure: no I/O, no goroutines, no globals that change. Every decoder
// is strict (exact lengths, no trailing bytes, bounded sizes), returns a
// typed error and never panics, and never allocates more than its input.
package wire
