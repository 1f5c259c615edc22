package cli

import (
	"context"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
)

// The blob store of parley relay: its flags and the store each backend
// keeps blobs in (docs/relay.md, "Blob store").

// relayBlobs are the blob flags of parley relay.
type relayBlobs struct {
	maxSize, addressBytes, ipBytes, totalBytes, reserveBytes *string
	lifetime, idleLifetime                                   *time.Duration
}

func relayBlobFlags(f *flags) *relayBlobs {
	return &relayBlobs{
		maxSize:      f.String("blob-max-size", "128MiB", "the largest blob (an encrypted file) the relay takes"),
		addressBytes: f.String("blob-address-bytes", "256MiB", "blob bytes one address may have on the relay (charged as uploaded, 64KiB from creation)"),
		ipBytes:      f.String("blob-ip-bytes", "256MiB", "blob bytes created from one remote IP the relay holds"),
		totalBytes:   f.String("blob-total-bytes", "1GiB", "blob bytes the relay holds in all, apart from the envelopes' --total-bytes"),
		reserveBytes: f.String("blob-reserve-bytes", "", "blob bytes of the total kept for IPs holding little: past the rest, an IP may hold a sixteenth of it (default a quarter of --blob-total-bytes; 0B: none)"),
		lifetime:     f.Duration("blob-lifetime", relayserver.DefaultBlobLifetime, "how long a blob is kept from its creation"),
		idleLifetime: f.Duration("blob-idle-lifetime", relaystore.DefaultBlobIdleLifetime, "how long an incomplete blob is kept without an upload"),
	}
}

// resolve sets the blob limits of l from the flags.
func (r *relayBlobs) resolve(l *relayserver.Limits) error {
	if *r.lifetime <= 0 || *r.idleLifetime <= 0 {
		return usagef("--blob-lifetime and --blob-idle-lifetime must be positive")
	}
	l.BlobLifetime, l.Blobs.IdleLifetime = *r.lifetime, *r.idleLifetime
	switch *r.reserveBytes {
	case "":
	case "0", "0B":
		l.Blobs.ReserveBytes = -1
	default:
		n, err := humanize.ParseBytes(*r.reserveBytes)
		if err != nil || n > 1<<40 {
			return usagef("--blob-reserve-bytes %q: want a size such as 256MiB, at most 1TiB", *r.reserveBytes)
		}
		l.Blobs.ReserveBytes = int64(n)
	}
	for _, b := range []struct {
		flag string
		in   string
		out  *int64
	}{{"blob-max-size", *r.maxSize, &l.Blobs.MaxSize}, {"blob-address-bytes", *r.addressBytes, &l.Blobs.AddressBytes},
		{"blob-ip-bytes", *r.ipBytes, &l.Blobs.IPBytes}, {"blob-total-bytes", *r.totalBytes, &l.Blobs.TotalBytes}} {
		n, err := humanize.ParseBytes(b.in)
		if err != nil || n == 0 || n > 1<<40 {
			return usagef("--%s %q: want a size such as 256MiB, at most 1TiB", b.flag, b.in)
		}
		*b.out = int64(n)
	}
	return nil
}

// openRelayBlobs opens the relay's blob store: on the cluster of store when
// it is a NATS one (with replicas copies), in SQLite beside the relay
// database when dataDir is set, in memory otherwise. The caller calls close
// after the server's Shutdown.
func openRelayBlobs(ctx context.Context, dataDir string, store relaystore.Store, replicas int, l relaystore.BlobLimits) (relaystore.BlobStore, func() error, error) {
	if ns, ok := store.(*natsstore.Store); ok {
		bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		b, err := natsstore.OpenBlobs(bctx, ns, replicas, l)
		if err != nil {
			return nil, nil, err
		}
		return b, func() error { return nil }, nil // the store's connection
	}
	switch {
	case dataDir != "":
		s, err := relaystore.OpenSQLiteBlobs(ctx, dataDir, l)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	return relaystore.NewMemoryBlobs(l), func() error { return nil }, nil
}
