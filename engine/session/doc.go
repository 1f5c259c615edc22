// Package session is parley's cryptographic protocol, a unit of its own:
// device identities and their safety numbers, prekeys and bundle
// verification, session set-up (X3DH made hybrid with one ML-KEM-768
// encapsulation), the Double Ratchet with its bounded skipped keys, the past
// receiving chains that tell a duplicate from a forgery, and the versioned
// records of all of them. It imports only package wire and curve
// arithmetic (its own internal/x25519 ladder over filippo.io/edwards25519),
// takes device addresses as strings, and keeps its state behind a small
// API: package engine, above it, never reads a field of a key, a session or
// a ratchet. Its errors are sentinels that package engine re-exports, so
// errors.Is works from either.
package session
