package wire_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var bundleFormat = format[wire.Bundle]{
	file:   "bundle.txt",
	title:  "prekey bundle",
	fuzz:   "FuzzDecodeBundle",
	encode: wire.EncodeBundle,
	decode: wire.DecodeBundle,
}

func kemPublicKey(start byte) (a [wire.KEMPublicKeySize]byte) {
	copy(a[:], seq(start, len(a)))
	return a
}

const (
	jan2026 = 1767225600 // 2026-01-01T00:00:00Z
	feb2026 = 1769904000 // 2026-02-01T00:00:00Z
)

// bundle is the bundle of the vectors, with or without a one-time prekey.
func bundle(otk bool) wire.Bundle {
	b := wire.Bundle{
		Address:            "bob/1",
		IdentitySigningKey: seq32(0x10),
		IdentityDHKey:      seq32(0x30),
		IdentitySignature:  seq64(0x50),
		SignedPreKey: wire.SignedPreKeyPublic{
			ID: 7, Created: jan2026, Expires: feb2026, PublicKey: seq32(0x90), Signature: seq64(0xb0),
		},
		KEMPreKey: wire.KEMPreKeyPublic{
			ID: 8, Created: jan2026, Expires: feb2026, PublicKey: kemPublicKey(0x00), Signature: seq64(0xf0),
		},
	}
	if otk {
		b.OneTimePreKey = &wire.OneTimePreKeyPublic{ID: 9, PublicKey: seq32(0xc0)}
	}
	return b
}

const bundleDoc = `address "bob/1", identity signing key bytes 10.., identity DH key bytes 30..,
	identity signature bytes 50.. (64),
	signed prekey: ID 7, created 1767225600 (2026-01-01), expires 1769904000 (2026-02-01),
	               public key bytes 90.., signature bytes b0.. (64),
	KEM prekey: ID 8, created 1767225600, expires 1769904000, public key bytes 00.. (1184),
	            signature bytes f0.. (64),`

func bundleVectors() []vector[wire.Bundle] {
	edge := bundle(false)
	edge.Address = longAddress
	edge.SignedPreKey.Created, edge.SignedPreKey.Expires = -1, -1
	edge.KEMPreKey.Created, edge.KEMPreKey.Expires = math.MinInt64, math.MaxInt64
	return []vector[wire.Bundle]{
		{
			name: "one-time-prekey",
			doc:  bundleDoc + "\none-time prekey: ID 9, public key bytes c0..",
			v:    bundle(true),
		},
		{
			name: "no-one-time-prekey",
			doc:  bundleDoc + "\nno one-time prekey",
			v:    bundle(false),
		},
		{
			name: "edges",
			doc: `as "no-one-time-prekey" but address 64 "z" then "/2147483647" (75 bytes, the maximum),
			      signed prekey created -1 and expires -1 (equal times are allowed),
			      KEM prekey created -2^63 and expires 2^63-1`,
			v: edge,
		},
	}
}

func TestBundleBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		change func(b *wire.Bundle)
		want   error
	}{
		{"address length 0", func(b *wire.Bundle) { b.Address = "" }, wire.ErrMalformed},
		{"address length 1", func(b *wire.Bundle) { b.Address = "b" }, nil},
		{"address length 75", func(b *wire.Bundle) { b.Address = longAddress }, nil},
		{"address length 76", func(b *wire.Bundle) { b.Address = longAddress + "1" }, wire.ErrMalformed},
		{"address with a space", func(b *wire.Bundle) { b.Address = "bob 1" }, wire.ErrMalformed},
		{"signed prekey created = expires", func(b *wire.Bundle) { b.SignedPreKey.Created = b.SignedPreKey.Expires }, nil},
		{"signed prekey created > expires", func(b *wire.Bundle) { b.SignedPreKey.Created = b.SignedPreKey.Expires + 1 }, wire.ErrMalformed},
		{"KEM prekey created = expires", func(b *wire.Bundle) { b.KEMPreKey.Expires = b.KEMPreKey.Created }, nil},
		{"KEM prekey created > expires", func(b *wire.Bundle) { b.KEMPreKey.Expires = b.KEMPreKey.Created - 1 }, wire.ErrMalformed},
		{"one-time prekey ID 0", func(b *wire.Bundle) { b.OneTimePreKey = &wire.OneTimePreKeyPublic{} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bundle(true)
			tt.change(&b)
			if tt.want != nil {
				wantEncodeError(t, wire.EncodeBundle, b, tt.want)
				if forged := forgeBundle(b); len(forged) > wire.MaxBundleSize {
					wantReject(t, wire.DecodeBundle, forged, wire.ErrMessageTooLarge)
				} else {
					wantReject(t, wire.DecodeBundle, forged, tt.want)
				}
				return
			}
			enc := mustEncode(wire.EncodeBundle, b)
			if !bytes.Equal(enc, forgeBundle(b)) {
				t.Fatalf("encode: got %s, want %s", brief(enc), brief(forgeBundle(b)))
			}
			roundTrip(t, bundleFormat, enc)
		})
	}
}

// forgeBundle lays out b without any checks.
func forgeBundle(b wire.Bundle) []byte {
	p := []byte{wire.BundleVersion, byte(len(b.Address))}
	p = append(p, b.Address...)
	p = append(p, b.IdentitySigningKey[:]...)
	p = append(p, b.IdentityDHKey[:]...)
	p = append(p, b.IdentitySignature[:]...)
	p = binary.BigEndian.AppendUint32(p, b.SignedPreKey.ID)
	p = binary.BigEndian.AppendUint64(p, uint64(b.SignedPreKey.Created))
	p = binary.BigEndian.AppendUint64(p, uint64(b.SignedPreKey.Expires))
	p = append(p, b.SignedPreKey.PublicKey[:]...)
	p = append(p, b.SignedPreKey.Signature[:]...)
	p = binary.BigEndian.AppendUint32(p, b.KEMPreKey.ID)
	p = binary.BigEndian.AppendUint64(p, uint64(b.KEMPreKey.Created))
	p = binary.BigEndian.AppendUint64(p, uint64(b.KEMPreKey.Expires))
	p = append(p, b.KEMPreKey.PublicKey[:]...)
	p = append(p, b.KEMPreKey.Signature[:]...)
	if b.OneTimePreKey == nil {
		return append(p, 0)
	}
	p = append(p, 1)
	p = binary.BigEndian.AppendUint32(p, b.OneTimePreKey.ID)
	return append(p, b.OneTimePreKey.PublicKey[:]...)
}

func TestDecodeBundleRejects(t *testing.T) {
	withOTK := mustEncode(wire.EncodeBundle, bundle(true))
	without := mustEncode(wire.EncodeBundle, bundle(false))
	with := func(b []byte, i int, c byte) []byte {
		b = bytes.Clone(b)
		b[i] = c
		return b
	}
	flagAt := len(without) - 1
	largest := bundle(true)
	largest.Address = longAddress
	maxBundle := mustEncode(wire.EncodeBundle, largest)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"version 0", with(without, 0, 0), wire.ErrUnsupportedVersion},
		{"version 2", with(without, 0, 2), wire.ErrUnsupportedVersion},
		{"over MaxBundleSize", append(bytes.Clone(maxBundle), 0), wire.ErrMessageTooLarge},
		{"address length 0", with(without, 1, 0), wire.ErrMalformed},
		{"address length 255", with(without, 1, 255), wire.ErrMalformed},
		{"address with a space", with(without, 4, ' '), wire.ErrMalformed},
		{"flag 2", with(without, flagAt, 2), wire.ErrMalformed},
		{"flag 1 without a key", with(without, flagAt, 1), wire.ErrMalformed},
		{"flag 0 with a key", with(withOTK, flagAt, 0), wire.ErrMalformed},
		{"trailing byte", append(bytes.Clone(without), 0), wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, wire.DecodeBundle, tt.in, tt.want)
		})
	}
	if len(maxBundle) != wire.MaxBundleSize {
		t.Errorf("largest bundle is %d bytes, want MaxBundleSize %d", len(maxBundle), wire.MaxBundleSize)
	}
}
