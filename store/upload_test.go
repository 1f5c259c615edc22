package store

import (
	"context"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// uploadPlanCases are the upload and quarantine plans for planCases: each
// applies whole, and TestFailpointErrors fails it at every point.
func uploadPlanCases() []planCase {
	ctx := context.Background()
	up := engine.Upload{Salt: [32]byte{7}, To: "bob/1", Path: "/tmp/photo.jpg", Size: 100, ModTime: 5, Blob: wire.BlobID{9},
		ID: wire.LogicalID{8}, ChunkSize: 64, At: planAt}
	return []planCase{
		{
			name: "upload-begin",
			plan: func(t testing.TB, f *fixture) engine.Plan { return engine.UploadBegin{Upload: up} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				got, err := f.db.Uploads(ctx, "bob/1")
				if err != nil || len(got) != 1 || got[0] != up {
					t.Errorf("Uploads = %+v, %v; want %+v", got, err, up)
				}
			},
		},
		{
			name:  "upload-end",
			setup: func(t testing.TB, f *fixture) { f.apply(t, engine.UploadBegin{Upload: up}) },
			plan:  func(t testing.TB, f *fixture) engine.Plan { return engine.UploadEnd{Salt: up.Salt} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if got, err := f.db.Uploads(ctx, ""); err != nil || len(got) != 0 {
					t.Errorf("Uploads = %+v, %v; want none", got, err)
				}
			},
		},
		{
			name: "quarantine-clear",
			setup: func(t testing.TB, f *fixture) {
				row := f.stage(t)
				f.apply(t, engine.DropStaged{StagedRow: row, Reason: "malformed_frame", At: planAt})
			},
			plan: func(t testing.TB, f *fixture) engine.Plan { return engine.ClearQuarantine{} },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				if q, err := f.db.Quarantined(ctx, 0, 10); err != nil || len(q) != 0 || r.Evicted != 1 {
					t.Errorf("Quarantined = %+v, %v after clearing %d; want none after 1", q, err, r.Evicted)
				}
			},
		},
	}
}

// TestUploadRecordRefused: an upload record without a path or a blob is
// refused before anything is written.
func TestUploadRecordRefused(t *testing.T) {
	f := newFixture(t, false)
	for _, u := range []engine.Upload{{Salt: [32]byte{1}, To: "bob/1", Blob: wire.BlobID{1}, ChunkSize: 1, At: planAt},
		{Salt: [32]byte{1}, To: "bob/1", Path: "/x", ChunkSize: 1, At: planAt}} {
		if _, err := f.db.Apply(context.Background(), engine.UploadBegin{Upload: u}); err == nil {
			t.Errorf("UploadBegin %+v applied, want it refused", u)
		}
	}
}
