package store

import (
	"context"
	"testing"
)

// BenchmarkOpenDefaultKDF measures one Open and Close of a profile with the
// production KDF parameters: the Argon2id run dominates.
func BenchmarkOpenDefaultKDF(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db, err := Create(ctx, dir, testPassphrase, Options{})
	if err != nil {
		b.Fatal(err)
	}
	db.Close()
	for b.Loop() {
		db, err := Open(ctx, dir, testPassphrase, Options{})
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// BenchmarkKDF measures the Argon2id run alone with the default parameters.
func BenchmarkKDF(b *testing.B) {
	rec, err := newKDFRecord(defaultKDF)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rec.wrappingSealer(testPassphrase)
	}
}

// BenchmarkCommit measures one small durable write transaction
// (BEGIN IMMEDIATE, one prepared statement, COMMIT with synchronous=FULL).
func BenchmarkCommit(b *testing.B) {
	db := MustOpenDB(b)
	v := make([]byte, 64)
	for b.Loop() {
		if err := withTx(b, db, func(ctx context.Context, w *tx) error { return w.putMeta(ctx, "bench", v) }); err != nil {
			b.Fatal(err)
		}
	}
}
