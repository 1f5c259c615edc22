package transport

import (
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestBlobRefusedErrorMatchesSentinels: each refusal of the relay matches
// the engine's sentinel of its reason, and no other.
func TestBlobRefusedErrorMatchesSentinels(t *testing.T) {
	sentinels := []error{engine.ErrBlobNotFound, engine.ErrBlobExpired, engine.ErrBlobOffset, engine.ErrBlobIncomplete, engine.ErrBlobQuota}
	tests := []struct {
		reason wire.BlobRefuseReason
		want   error // nil: none
	}{
		{wire.BlobNotFound, engine.ErrBlobNotFound},
		{wire.BlobExpired, engine.ErrBlobExpired},
		{wire.BlobBadOffset, engine.ErrBlobOffset},
		{wire.BlobIncomplete, engine.ErrBlobIncomplete},
		{wire.BlobQuota, engine.ErrBlobQuota},
		{wire.BlobTooLarge, engine.ErrBlobQuota},
		{wire.BlobNotOwner, nil},
	}
	for _, tt := range tests {
		t.Run(tt.reason.String(), func(t *testing.T) {
			err := error(&BlobRefusedError{ID: wire.BlobID{0xab, 0xcd}, Reason: tt.reason})
			for _, s := range sentinels {
				if got := errors.Is(err, s); got != (s == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, s == tt.want)
				}
			}
			if !strings.Contains(err.Error(), tt.reason.String()) || !strings.Contains(err.Error(), "abcd") {
				t.Errorf("%q names neither the reason nor the blob's first bytes", err)
			}
		})
	}
}
