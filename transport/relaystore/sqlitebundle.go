package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// Bundles and one-time prekeys on SQLite. A publish and a fetch that hands
// out a one-time prekey write, so they join the group commit (sqliteack.go)
// rather than sync a transaction each: a client may publish as often as
// its message bucket lets it.

func registeredKey(ctx context.Context, tx *sql.Tx, address string) ([]byte, error) {
	var k []byte
	err := tx.QueryRowContext(ctx, selectKey, address).Scan(&k)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotRegistered
	}
	return k, err
}

// putBundleWork stores an address's bundle and adds to its pool.
type putBundleWork struct {
	address string
	key     [32]byte
	enc     []byte // the bundle without a one-time prekey
	oneTime []wire.OneTimePreKeyPublic
	added   int
}

func (p *putBundleWork) run(ctx context.Context, s *SQLite, tx *sql.Tx) error {
	p.added = 0
	k, err := registeredKey(ctx, tx, p.address)
	if errors.Is(err, ErrNotRegistered) || err == nil && string(k) != string(p.key[:]) {
		return ErrKeyMismatch // nothing written
	} else if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO bundles (address, bundle) VALUES (?, ?) ON CONFLICT (address) DO UPDATE SET bundle = excluded.bundle", p.address, p.enc); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM one_time_prekeys WHERE address = ?", p.address).Scan(&n); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, "INSERT INTO one_time_prekeys (address, id, public_key) VALUES (?, ?, ?) ON CONFLICT (address, id) DO NOTHING")
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, otk := range p.oneTime {
		if n >= s.limits.OneTimePreKeys {
			break
		}
		res, err := ins.ExecContext(ctx, p.address, otk.ID, otk.PublicKey[:])
		if err != nil {
			return err
		}
		if c, _ := res.RowsAffected(); c > 0 {
			n++
			p.added++
		}
	}
	return nil
}

func (p *putBundleWork) done(*SQLite, error) {}

// PutBundle implements Store. The write joins the next group commit.
func (s *SQLite) PutBundle(ctx context.Context, address string, key [32]byte, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) (int, error) {
	b.OneTimePreKey = nil
	enc, err := wire.EncodeBundle(b)
	if err != nil {
		return 0, fmt.Errorf("publish bundle of %s: %w", address, err)
	}
	p := &putBundleWork{address: address, key: key, enc: enc, oneTime: oneTime}
	if err := s.commitWork(ctx, p); err != nil {
		return 0, fmt.Errorf("publish bundle of %s: %w", address, err)
	}
	return p.added, nil
}

// takeBundleWork reads an address's bundle and takes the oldest one-time
// prekey of its pool.
type takeBundleWork struct {
	address string
	bundle  wire.Bundle
	pool    int
}

func (t *takeBundleWork) run(ctx context.Context, s *SQLite, tx *sql.Tx) error {
	b, pool, err := readBundle(ctx, tx, t.address)
	if err != nil {
		return err
	}
	var seq int64
	var k wire.OneTimePreKeyPublic
	var pub []byte
	err = tx.QueryRowContext(ctx, "SELECT seq, id, public_key FROM one_time_prekeys WHERE address = ? ORDER BY seq LIMIT 1", t.address).Scan(&seq, &k.ID, &pub)
	if errors.Is(err, sql.ErrNoRows) {
		t.bundle, t.pool = b, pool
		return nil
	} else if err != nil {
		return err
	}
	copy(k.PublicKey[:], pub)
	if _, err := tx.ExecContext(ctx, "DELETE FROM one_time_prekeys WHERE seq = ?", seq); err != nil {
		return err
	}
	b.OneTimePreKey = &k
	t.bundle, t.pool = b, pool-1
	return nil
}

func (t *takeBundleWork) done(*SQLite, error) {}

// readBundle reads an address's bundle and counts its pool.
func readBundle(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, address string) (wire.Bundle, int, error) {
	var enc []byte
	err := q.QueryRowContext(ctx, "SELECT bundle FROM bundles WHERE address = ?", address).Scan(&enc)
	if errors.Is(err, sql.ErrNoRows) {
		return wire.Bundle{}, 0, ErrNoBundle
	} else if err != nil {
		return wire.Bundle{}, 0, err
	}
	b, err := wire.DecodeBundle(enc)
	if err != nil {
		return wire.Bundle{}, 0, err
	}
	var pool int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM one_time_prekeys WHERE address = ?", address).Scan(&pool); err != nil {
		return wire.Bundle{}, 0, err
	}
	return b, pool, nil
}

// TakeBundle implements Store. A fetch that takes a one-time prekey joins
// the next group commit; one without reads alone.
func (s *SQLite) TakeBundle(ctx context.Context, address string, oneTime bool) (wire.Bundle, int, error) {
	if !oneTime {
		b, pool, err := readBundle(ctx, s.db, address)
		if err != nil {
			return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, err)
		}
		return b, pool, nil
	}
	t := &takeBundleWork{address: address}
	if err := s.commitWork(ctx, t); err != nil {
		return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, err)
	}
	return t.bundle, t.pool, nil
}
