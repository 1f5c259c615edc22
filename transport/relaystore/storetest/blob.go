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
	t.Run("chunk rule", func(t *testing.T) { testBlobChunks(t, open) })
	t.Run("puts together", func(t *testing.T) { testBlobPuts(t, open) })
	t.Run("quotas", func(t *testing.T) { testBlobQuotas(t, open) })
	t.Run("reserve", func(t *testing.T) { testBlobReserve(t, open) })
	t.Run("lifetime", func(t *testing.T) { testBlobLifetime(t, open) })
	t.Run("idle", func(t *testing.T) { testBlobIdle(t, open) })
}

var (
	t0    = time.Unix(1_700_000_000, 0)
	owner = relaystore.BlobOwner{Address: "alice/1", IP: "192.0.2.1"}
)

func mustCreate(t *testing.T, s relaystore.BlobStore, size int64, from relaystore.BlobOwner, expires time.Time) wire.BlobID {
	t.Helper()
	id, err := s.CreateBlob(context.Background(), size, from, t0, expires)
	if err != nil {
		t.Fatalf("create a blob of %d bytes for %+v: %v", size, from, err)
	}
	return id
}

func mustPut(t *testing.T, s relaystore.BlobStore, id wire.BlobID, offset int64, data []byte, wantHeld int64) {
	t.Helper()
	mustPutAs(t, s, id, owner.Address, offset, data, wantHeld)
}

func mustPutAs(t *testing.T, s relaystore.BlobStore, id wire.BlobID, by string, offset int64, data []byte, wantHeld int64) {
	t.Helper()
	info, err := s.PutBlob(context.Background(), id, by, offset, data, t0)
	if err != nil || info.Held != wantHeld {
		t.Fatalf("put %d bytes at %d: %+v, %v; want held %d", len(data), offset, info, err, wantHeld)
	}
}

func wantStats(t *testing.T, s relaystore.BlobStore, want relaystore.BlobStats) {
	t.Helper()
	if st, err := s.BlobStats(context.Background()); err != nil || st != want {
		t.Fatalf("stats: %+v, %v; want %+v", st, err, want)
	}
}

// testBlobUpload: a blob is written in order from its start by its owner,
// says what it holds, and is read by ranges across chunks once complete.
func testBlobUpload(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MinChunk: 7})
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
		{14, 6, content[14:]},  // the last chunk
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
	wantStats(t, s, relaystore.BlobStats{Blobs: 2, Charged: 2 * relaystore.DefaultBlobMinCharge, Held: 20})
}

// testBlobChunks: the first write of a blob sets its chunk size, at least
// MinChunk unless it completes the blob; every later write repeats it but
// the last, which may be shorter and not longer. A write that breaks the
// rule is ErrBlobChunk and changes nothing.
func testBlobChunks(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MinChunk: 8})
	put := func(id wire.BlobID, offset int64, n int) error {
		_, err := s.PutBlob(ctx, id, owner.Address, offset, bytes.Repeat([]byte{'x'}, n), t0)
		return err
	}
	a := mustCreate(t, s, 30, owner, t0.Add(time.Hour))
	for _, st := range []struct {
		name   string
		offset int64
		n      int
		want   error
	}{
		{"a first write under the least", 0, 7, relaystore.ErrBlobChunk},
		{"a first write of 10", 0, 10, nil},
		{"a shorter one", 10, 8, relaystore.ErrBlobChunk},
		{"a longer one", 10, 11, relaystore.ErrBlobChunk},
		{"one of 10", 10, 10, nil},
		{"the last one, of the chunk size", 20, 10, nil},
	} {
		if err := put(a, st.offset, st.n); !errors.Is(err, st.want) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.want)
		}
	}
	if got, err := s.GetBlob(ctx, a, 5, 20, t0); err != nil || len(got) != 20 {
		t.Fatalf("read across the chunks: %d bytes, %v", len(got), err)
	}
	b := mustCreate(t, s, 25, owner, t0.Add(time.Hour))
	mustPut(t, s, b, 0, bytes.Repeat([]byte{'y'}, 10), 10)
	mustPut(t, s, b, 10, bytes.Repeat([]byte{'y'}, 10), 20)
	if err := put(b, 20, 5); err != nil {
		t.Fatalf("a last write shorter than the chunks: %v", err)
	}
	c := mustCreate(t, s, 15, owner, t0.Add(time.Hour))
	mustPut(t, s, c, 0, bytes.Repeat([]byte{'z'}, 8), 8)
	if err := put(c, 8, 7); err != nil {
		t.Fatalf("a last write of 7 after one of 8: %v", err)
	}
	d := mustCreate(t, s, 18, owner, t0.Add(time.Hour))
	mustPut(t, s, d, 0, bytes.Repeat([]byte{'w'}, 8), 8)
	if err := put(d, 8, 10); !errors.Is(err, relaystore.ErrBlobChunk) {
		t.Fatalf("a last write of 10 after one of 8: %v, want ErrBlobChunk", err)
	}
	small := mustCreate(t, s, 3, owner, t0.Add(time.Hour))
	if err := put(small, 0, 3); err != nil {
		t.Fatalf("a blob under the least written at once: %v", err)
	}
	if info, err := s.BlobInfo(ctx, d, t0); err != nil || info.Held != 8 {
		t.Fatalf("after a refused write: %+v, %v; want held 8", info, err)
	}
}

// testBlobPuts: PutBlobs writes several chunks as that many PutBlob calls
// would, saying what the store holds after each; at a chunk that breaks a
// rule (the chunk rule, the offset, a quota) it stops, keeping the chunks
// before it, charged, and the store holds exactly those.
func testBlobPuts(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MinChunk: 8, MinCharge: 8, AddressBytes: 60, IPBytes: 1 << 20, TotalBytes: 1 << 20, ReserveBytes: -1})
	chunks := func(sizes ...int) [][]byte {
		var out [][]byte
		for i, n := range sizes {
			out = append(out, bytes.Repeat([]byte{byte('a' + i)}, n))
		}
		return out
	}
	held := func(infos []relaystore.BlobInfo) []int64 {
		var out []int64
		for _, in := range infos {
			out = append(out, in.Held)
		}
		return out
	}
	a := mustCreate(t, s, 35, owner, t0.Add(time.Hour))
	infos, err := s.PutBlobs(ctx, a, owner.Address, 0, chunks(10, 10, 10), t0)
	if err != nil || len(infos) != 3 || infos[2].Held != 30 || infos[0].Held != 10 || infos[2].Size != 35 {
		t.Fatalf("three chunks together: %v, %v; want held 10, 20, 30", held(infos), err)
	}
	infos, err = s.PutBlobs(ctx, a, owner.Address, 30, chunks(5), t0)
	if err != nil || len(infos) != 1 || infos[0].Held != 35 {
		t.Fatalf("the last chunk: %v, %v; want held 35", held(infos), err)
	}
	got, err := s.GetBlob(ctx, a, 0, 35, t0)
	if err != nil || !bytes.Equal(got, bytes.Join(append(chunks(10, 10, 10), bytes.Repeat([]byte{'a'}, 5)), nil)) {
		t.Fatalf("read back: %q, %v", got, err)
	}

	// The second chunk breaks the chunk rule: the first is kept.
	b := mustCreate(t, s, 40, owner, t0.Add(time.Hour))
	infos, err = s.PutBlobs(ctx, b, owner.Address, 0, chunks(10, 9, 10), t0)
	if !errors.Is(err, relaystore.ErrBlobChunk) || len(infos) != 1 || infos[0].Held != 10 {
		t.Fatalf("a group whose second chunk breaks the rule: %v, %v; want held 10 and ErrBlobChunk", held(infos), err)
	}
	if info, err := s.BlobInfo(ctx, b, t0); err != nil || info.Held != 10 {
		t.Fatalf("after it: %+v, %v; want held 10", info, err)
	}
	// A group past the address's 60 bytes (a's 35, b's 10 held): the
	// chunk that fits is written, the next refused.
	infos, err = s.PutBlobs(ctx, b, owner.Address, 10, chunks(10, 10), t0)
	if !errors.Is(err, relaystore.ErrBlobAddressQuota) || len(infos) != 1 || infos[0].Held != 20 {
		t.Fatalf("a group past the address's share: %v, %v; want held 20 and ErrBlobAddressQuota", held(infos), err)
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 2, Charged: 55, Held: 55})
	// A group at the wrong offset writes nothing.
	if infos, err := s.PutBlobs(ctx, b, owner.Address, 10, chunks(10), t0); !errors.Is(err, relaystore.ErrBlobOffset) || len(infos) != 0 {
		t.Fatalf("a group at the wrong offset: %v, %v; want ErrBlobOffset and nothing", held(infos), err)
	}
}

// testBlobQuotas: the largest blob, the least charge, and the shares of an
// address, of an IP and of the store, each refused with its own error
// while the others still have room. A blob is charged the least at its
// creation and what it holds as it is written; a refused write changes
// nothing.
func testBlobQuotas(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MaxSize: 100, MinCharge: 10, MinChunk: 10, AddressBytes: 100, IPBytes: 150, TotalBytes: 200, ReserveBytes: -1})
	exp := t0.Add(time.Hour)
	a := relaystore.BlobOwner{Address: "a/1", IP: "192.0.2.1"}
	b := relaystore.BlobOwner{Address: "b/1", IP: "192.0.2.1"}
	c := relaystore.BlobOwner{Address: "c/1", IP: "192.0.2.2"}
	d := relaystore.BlobOwner{Address: "d/1", IP: "192.0.2.3"}
	for _, size := range []int64{101, 0} {
		if _, err := s.CreateBlob(ctx, size, a, t0, exp); !errors.Is(err, relaystore.ErrBlobTooLarge) {
			t.Fatalf("a blob of %d bytes: %v, want ErrBlobTooLarge", size, err)
		}
	}
	put := func(id wire.BlobID, by relaystore.BlobOwner, offset int64, n int) error {
		_, err := s.PutBlob(ctx, id, by.Address, offset, make([]byte, n), t0)
		return err
	}
	a1 := mustCreate(t, s, 100, a, exp) // a: 10
	a2 := mustCreate(t, s, 100, a, exp) // a: 20
	if err := put(a1, a, 0, 80); err != nil {
		t.Fatal(err) // a1 holds 80: a 90
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 2, Charged: 90, Held: 80})
	if err := put(a1, a, 80, 20); !errors.Is(err, relaystore.ErrBlobAddressQuota) {
		t.Fatalf("a write past the address's share: %v, want ErrBlobAddressQuota", err)
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 2, Charged: 90, Held: 80})
	if err := put(a2, a, 0, 10); err != nil {
		t.Fatalf("a write within the least charge: %v", err)
	}
	b1 := mustCreate(t, s, 100, b, exp) // the IP: 100
	if err := put(b1, b, 0, 50); err != nil {
		t.Fatal(err) // the IP: 140
	}
	if err := put(b1, b, 50, 50); !errors.Is(err, relaystore.ErrBlobIPQuota) {
		t.Fatalf("a write past the IP's share: %v, want ErrBlobIPQuota", err)
	}
	mustCreate(t, s, 100, b, exp) // the IP: 150
	if _, err := s.CreateBlob(ctx, 1, b, t0, exp); !errors.Is(err, relaystore.ErrBlobIPQuota) {
		t.Fatalf("a create past the IP's share: %v, want ErrBlobIPQuota", err)
	}
	c1 := mustCreate(t, s, 100, c, exp) // the store: 160
	if err := put(c1, c, 0, 40); err != nil {
		t.Fatal(err) // the store: 190
	}
	mustCreate(t, s, 100, c, exp) // the store: 200
	if err := put(c1, c, 40, 40); !errors.Is(err, relaystore.ErrBlobStoreFull) {
		t.Fatalf("a write past the store's total: %v, want ErrBlobStoreFull", err)
	}
	if _, err := s.CreateBlob(ctx, 1, d, t0, exp); !errors.Is(err, relaystore.ErrBlobStoreFull) {
		t.Fatalf("a create in a full store: %v, want ErrBlobStoreFull", err)
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 6, Charged: 200, Held: 180})
}

// testBlobReserve: past the total less the reserve, a charge is refused
// (ErrBlobReserve) when the owner's IP would hold more than a sixteenth of
// the reserve; an IP that filled the rest cannot take the reserve, while
// each fresh IP still stores its sixteenth.
func testBlobReserve(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MaxSize: 200, MinCharge: 1, MinChunk: 1, AddressBytes: 1000, IPBytes: 1000, TotalBytes: 320, ReserveBytes: 160})
	exp := t0.Add(time.Hour)
	filler := relaystore.BlobOwner{Address: "filler/1", IP: "192.0.2.9"}
	f := mustCreate(t, s, 200, filler, exp)
	mustPutAs(t, s, f, filler.Address, 0, make([]byte, 80), 80)
	mustPutAs(t, s, f, filler.Address, 80, make([]byte, 80), 160) // the store: 160, the rest full
	if _, err := s.PutBlob(ctx, f, filler.Address, 160, make([]byte, 40), t0); !errors.Is(err, relaystore.ErrBlobReserve) {
		t.Fatalf("the filler's write into the reserve: %v, want ErrBlobReserve", err)
	}
	if _, err := s.CreateBlob(ctx, 10, filler, t0, exp); !errors.Is(err, relaystore.ErrBlobReserve) {
		t.Fatalf("the filler's create in the reserve: %v, want ErrBlobReserve", err)
	}
	// Each fresh IP stores its sixteenth (10 bytes), no more.
	for i, ip := range []string{"192.0.2.10", "192.0.2.11"} {
		o := relaystore.BlobOwner{Address: "fresh/" + string(rune('1'+i)), IP: ip}
		id := mustCreate(t, s, 10, o, exp)
		mustPutAs(t, s, id, o.Address, 0, make([]byte, 10), 10)
		if _, err := s.CreateBlob(ctx, 5, o, t0, exp); !errors.Is(err, relaystore.ErrBlobReserve) {
			t.Fatalf("a fresh IP past its sixteenth of the reserve: %v, want ErrBlobReserve", err)
		}
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 3, Charged: 180, Held: 180})
}

// testBlobLifetime: past its expiry a blob is refused as expired, swept or
// not; the sweep frees its charge, and forgets it later.
func testBlobLifetime(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MinCharge: 1, MinChunk: 1, TotalBytes: 12, ReserveBytes: -1, IdleLifetime: 24 * time.Hour})
	id := mustCreate(t, s, 4, owner, t0.Add(time.Hour))
	mustPut(t, s, id, 0, []byte("abcd"), 4)
	late := mustCreate(t, s, 6, owner, t0.Add(3*time.Hour))
	mustPut(t, s, late, 0, []byte("abcdef"), 6) // the store: 10
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
	if _, err := s.CreateBlob(ctx, 3, owner, after, after.Add(time.Hour)); err != nil {
		t.Fatal(err) // the store: 11
	}
	if _, err := s.CreateBlob(ctx, 3, owner, after, after.Add(time.Hour)); err != nil {
		t.Fatal(err) // the store: 12
	}
	if _, err := s.CreateBlob(ctx, 3, owner, after, after.Add(time.Hour)); !errors.Is(err, relaystore.ErrBlobStoreFull) {
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
	wantStats(t, s, relaystore.BlobStats{Blobs: 3, Charged: 8, Held: 6})
	if _, err := s.CreateBlob(ctx, 4, owner, after, after.Add(time.Hour)); err != nil {
		t.Fatalf("a create once the charge was freed: %v", err)
	}
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

// testBlobIdle: an incomplete blob that had no write for IdleLifetime is
// expired, though its lifetime runs on, and the sweep frees its charge; a
// write pushes its idle time back; a complete blob never idles out.
func testBlobIdle(t *testing.T, open OpenBlobs) {
	ctx := context.Background()
	s := open(t, relaystore.BlobLimits{MinCharge: 10, MinChunk: 1, IdleLifetime: time.Hour})
	exp := t0.Add(7 * 24 * time.Hour)
	untouched := mustCreate(t, s, 100, owner, exp)
	half := mustCreate(t, s, 150, owner, exp)
	mustPut(t, s, half, 0, make([]byte, 50), 50)
	done := mustCreate(t, s, 5, owner, exp)
	mustPut(t, s, done, 0, []byte("12345"), 5)
	// A write at t0+50m pushes half's idle time to t0+1h50m.
	if _, err := s.PutBlob(ctx, half, owner.Address, 50, make([]byte, 50), t0.Add(50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	if _, err := s.BlobInfo(ctx, untouched, later); !errors.Is(err, relaystore.ErrBlobExpired) {
		t.Fatalf("an incomplete blob idle for an hour: %v, want ErrBlobExpired", err)
	}
	if info, err := s.BlobInfo(ctx, half, later); err != nil || info.Held != 100 {
		t.Fatalf("a blob written 10 minutes ago: %+v, %v", info, err)
	}
	if n, err := s.ExpireBlobs(ctx, later, t0, 10); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want the idle blob", n, err)
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 2, Charged: 100 + 10, Held: 105})
	muchLater := t0.Add(3 * time.Hour)
	if n, err := s.ExpireBlobs(ctx, muchLater, t0, 10); err != nil || n != 1 {
		t.Fatalf("sweep at t0+3h: %d, %v; want the other incomplete blob, not the complete one", n, err)
	}
	if got, err := s.GetBlob(ctx, done, 0, 5, muchLater); err != nil || string(got) != "12345" {
		t.Fatalf("a complete blob three hours on: %q, %v", got, err)
	}
	if n, err := s.ExpireBlobs(ctx, muchLater, t0, 10); err != nil || n != 0 {
		t.Fatalf("a second sweep: %d, %v; want 0", n, err)
	}
	wantStats(t, s, relaystore.BlobStats{Blobs: 1, Charged: 10, Held: 5})
}
