package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// OpenBlobs opens a fresh, empty blob store with the given limits; the
// caller's test closes whatever it must.
type OpenBlobs func(t *testing.T, l relaystore.BlobLimits) relaystore.BlobStore

// RunBlobs runs every conformance test of relaystore.BlobStore against the
// stores open makes.
func RunBlobs(t *testing.T, open OpenBlobs) {
	t.Run("upload and ranges", func(t *testing.T) { testBlobUpload(t, open) })
	t.Run("quotas", func(t *testing.T) { testBlobQuotas(t, open) })
	t.Run("lifetime", func(t *testing.T) { testBlobLifetime(t, open) })
}

var (
	t0    = time.Unix(1_700_000_000, 0)
	owner = relaystore.BlobOwner{Address: "alice/1", IP: "192.0.2.1"}
)

func mustCreate(t *testing.T, s relaystore.BlobStore, size int64, from relaystore.BlobOwner, expires time.Time) wire.BlobID {
	t.Helper()
	id, err := s.CreateBlob(context.Background(), size, from, expires)
	if err != nil {
		t.Fatalf("create a blob of %d bytes for %+v: %v", size, from, err)
	}
	return id
}

func mustPut(t *testing.T, s relaystore.BlobStore, id wire.BlobID, offset int64, data []byte, wantHeld int64) {
	t.Helper()
	info, err := s.PutBlob(context.Background(), id, owner.Address, offset, data, t0)
	if err != nil || info.Held != wantHeld {
		t.Fatalf("put %d bytes at %d: %+v, %v; want held %d", len(data), offset, info, err, wantHeld)
	}
}

// testBlobUpload: a blob is written in order from its start by its owner,
// says what it holds, and is read by ranges across chunks once complete.
func testBlobUpload(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{})
	content := []byte("0123456789abcdefghij") // 20 bytes, written as 7 + 7 + 6
	id := mustCreate(t, s, int64(len(content)), owner, t0.Add(time.Hour))
	other := mustCreate(t, s, 5, owner, t0.Add(time.Hour))
	if id == (wire.BlobID{}) || id == other {
		t.Fatalf("IDs %s and %s: want two distinct, non-zero IDs", id, other)
	}
	if info, err := s.BlobInfo(ctx, id, t0); err != nil || info.Held != 0 || info.Size != 20 || !info.Expires.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a new blob: %+v, %v; want held 0 of 20 until %v", info, err, t0.Add(time.Hour))
	}
	mustPut(t, s, id, 0, content[:7], 7)
	refusals := []struct {
		name   string
		owner  string
		offset int64
		data   []byte
		want   error
	}{
		{"again at 0", owner.Address, 0, content[:7], relaystore.ErrBlobOffset},
		{"past what is held", owner.Address, 8, content[8:10], relaystore.ErrBlobOffset},
		{"past the size", owner.Address, 7, make([]byte, 14), relaystore.ErrBlobOffset},
		{"by another address", "mallory/1", 7, content[7:14], relaystore.ErrBlobNotOwner},
	}
	for _, r := range refusals {
		if info, err := s.PutBlob(ctx, id, r.owner, r.offset, r.data, t0); !errors.Is(err, r.want) || info != (relaystore.BlobInfo{}) {
			t.Errorf("put %s: %+v, %v; want %v", r.name, info, err, r.want)
		}
	}
	if _, err := s.GetBlob(ctx, id, 0, 5, t0); !errors.Is(err, relaystore.ErrBlobIncomplete) {
		t.Fatalf("read of a blob held in part: %v, want ErrBlobIncomplete", err)
	}
	mustPut(t, s, id, 7, content[7:14], 14)
	if info, err := s.BlobInfo(ctx, id, t0); err != nil || info.Held != 14 {
		t.Fatalf("after two chunks: %+v, %v; want held 14 (the refusals changed nothing)", info, err)
	}
	mustPut(t, s, id, 14, content[14:], 20)
	reads := []struct {
		offset int64
		n      int
		want   []byte
	}{
		{0, 20, content},
		{0, 100, content},
		{3, 2, content[3:5]},
		{5, 10, content[5:15]}, // across three chunks
		{7, 7, content[7:14]},  // one chunk exactly
		{19, 5, content[19:]},
		{20, 5, nil},
		{25, 5, nil},
	}
	for _, r := range reads {
		got, err := s.GetBlob(ctx, id, r.offset, r.n, t0)
		if err != nil || !bytes.Equal(got, r.want) || len(got) != len(r.want) {
			t.Errorf("read %d at %d: %q, %v; want %q", r.n, r.offset, got, err, r.want)
		}
	}
	if _, err := s.PutBlob(ctx, id, owner.Address, 20, []byte{1}, t0); !errors.Is(err, relaystore.ErrBlobOffset) {
		t.Errorf("write to a complete blob: %v, want ErrBlobOffset", err)
	}
	unknown := wire.BlobID{0xee}
	if _, err := s.BlobInfo(ctx, unknown, t0); !errors.Is(err, relaystore.ErrBlobNotFound) {
		t.Errorf("info of an unknown blob: %v, want ErrBlobNotFound", err)
	}
	if _, err := s.GetBlob(ctx, unknown, 0, 1, t0); !errors.Is(err, relaystore.ErrBlobNotFound) {
		t.Errorf("read of an unknown blob: %v, want ErrBlobNotFound", err)
	}
	if _, err := s.PutBlob(ctx, unknown, owner.Address, 0, []byte{1}, t0); !errors.Is(err, relaystore.ErrBlobNotFound) {
		t.Errorf("write to an unknown blob: %v, want ErrBlobNotFound", err)
	}
	st, err := s.BlobStats(ctx)
	if want := (relaystore.BlobStats{Blobs: 2, Charged: 2 * relaystore.DefaultBlobMinCharge, Held: 20}); err != nil || st != want {
		t.Errorf("stats: %+v, %v; want %+v", st, err, want)
	}
}

// testBlobQuotas: the largest blob, the minimum charge, and the shares of an
// address, of an IP and of the store, each refused with its own error while
// the others still have room.
func testBlobQuotas(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MaxSize: 100, MinCharge: 10, AddressBytes: 100, IPBytes: 150, TotalBytes: 200})
	exp := t0.Add(time.Hour)
	a := relaystore.BlobOwner{Address: "a/1", IP: "192.0.2.1"}
	b := relaystore.BlobOwner{Address: "b/1", IP: "192.0.2.1"}
	c := relaystore.BlobOwner{Address: "c/1", IP: "192.0.2.2"}
	d := relaystore.BlobOwner{Address: "d/1", IP: "192.0.2.3"}
	steps := []struct {
		from relaystore.BlobOwner
		size int64
		want error
	}{
		{a, 101, relaystore.ErrBlobTooLarge},
		{a, 0, relaystore.ErrBlobTooLarge},
		{a, 90, nil},
		{a, 1, nil}, // charged 10: a holds 100
		{a, 1, relaystore.ErrBlobAddressQuota},
		{b, 50, nil}, // the IP holds 150
		{b, 1, relaystore.ErrBlobIPQuota},
		{c, 49, nil}, // the store holds 199
		{c, 2, relaystore.ErrBlobStoreFull},
		{d, 1, relaystore.ErrBlobStoreFull},
	}
	for i, st := range steps {
		_, err := s.CreateBlob(ctx, st.size, st.from, exp)
		if !errors.Is(err, st.want) {
			t.Fatalf("step %d: %s creates %d bytes: %v, want %v", i, st.from.Address, st.size, err, st.want)
		}
	}
	if st, err := s.BlobStats(ctx); err != nil || st.Blobs != 4 || st.Charged != 199 {
		t.Errorf("stats: %+v, %v; want 4 blobs charged 199", st, err)
	}
}

// testBlobLifetime: past its expiry a blob is refused as expired, swept or
// not; the sweep frees its charge, and forgets it later.
func testBlobLifetime(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MinCharge: 1, TotalBytes: 12})
	id := mustCreate(t, s, 4, owner, t0.Add(time.Hour))
	mustPut(t, s, id, 0, []byte("abcd"), 4)
	late := mustCreate(t, s, 6, owner, t0.Add(3*time.Hour))
	if n, err := s.ExpireBlobs(ctx, t0, t0, 10); err != nil || n != 0 {
		t.Fatalf("sweep before any expiry: %d, %v; want 0", n, err)
	}
	after := t0.Add(2 * time.Hour)
	if _, err := s.GetBlob(ctx, id, 0, 4, after); !errors.Is(err, relaystore.ErrBlobExpired) {
		t.Fatalf("read past the expiry, before the sweep: %v, want ErrBlobExpired", err)
	}
	if _, err := s.PutBlob(ctx, id, owner.Address, 4, []byte{1}, after); !errors.Is(err, relaystore.ErrBlobExpired) {
		t.Fatalf("write past the expiry: %v, want ErrBlobExpired", err)
	}
	if _, err := s.CreateBlob(ctx, 3, owner, after.Add(time.Hour)); !errors.Is(err, relaystore.ErrBlobStoreFull) {
		t.Fatalf("create while the expired blob is charged: %v, want ErrBlobStoreFull", err)
	}
	if n, err := s.ExpireBlobs(ctx, after, t0, 10); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want 1", n, err)
	}
	if _, err := s.BlobInfo(ctx, id, after); !errors.Is(err, relaystore.ErrBlobExpired) {
		t.Fatalf("info after the sweep: %v, want ErrBlobExpired (the record stays)", err)
	}
	if info, err := s.BlobInfo(ctx, late, after); err != nil || info.Size != 6 {
		t.Fatalf("a blob that lives on: %+v, %v", info, err)
	}
	if st, err := s.BlobStats(ctx); err != nil || st != (relaystore.BlobStats{Blobs: 1, Charged: 6, Held: 0}) {
		t.Fatalf("stats after the sweep: %+v, %v; want 1 blob charged 6, nothing held", st, err)
	}
	mustCreate(t, s, 4, owner, after.Add(time.Hour)) // the charge was freed
	if n, err := s.ExpireBlobs(ctx, after, after, 10); err != nil || n != 0 {
		t.Fatalf("a second sweep: %d, %v; want 0 (the data is gone already)", n, err)
	}
	if _, err := s.BlobInfo(ctx, id, after); !errors.Is(err, relaystore.ErrBlobNotFound) {
		t.Fatalf("info once the record is forgotten: %v, want ErrBlobNotFound", err)
	}
	// max bounds one sweep.
	for range 2 {
		mustCreate(t, s, 1, owner, t0)
	}
	if n, err := s.ExpireBlobs(ctx, after, t0, 1); err != nil || n != 1 {
		t.Fatalf("sweep of at most 1: %d, %v", n, err)
	}
	if n, err := s.ExpireBlobs(ctx, after, t0, 10); err != nil || n != 1 {
		t.Fatalf("the next sweep: %d, %v; want the other one", n, err)
	}
}
