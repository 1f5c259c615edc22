package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The statements of the group commit's appends and acknowledgements. They
// are prepared once on the store's one connection and bound to each
// transaction (Tx.StmtContext reuses a statement already prepared on the
// transaction's connection), so that an envelope's dozen statements are
// not each compiled again.

const (
	selectKey   = "SELECT signing_key FROM registrations WHERE address = ?"
	selectUsage = "SELECT envelopes, bytes FROM usage WHERE scope = ? AND key = ?"
	upsertUsage = `INSERT INTO usage (scope, key, envelopes, bytes) VALUES (?, ?, ?, ?)
			ON CONFLICT (scope, key) DO UPDATE SET envelopes = envelopes + excluded.envelopes, bytes = bytes + excluded.bytes`
	deleteUsage    = "DELETE FROM usage WHERE scope = ? AND key = ? AND envelopes <= 0"
	insertEnvelope = "INSERT INTO envelopes (recipient, envelope, sender, ip, accepted, envelope_id, stranger, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING row"
	insertPayload  = "INSERT INTO payloads (payload, refs) VALUES (?, 0) RETURNING id"
	refPayload     = "UPDATE payloads SET refs = refs + ? WHERE id = ?"
)

// sqliteStmts holds the prepared statements.
type sqliteStmts struct {
	key, usage, upsert, deleteUsage, insert *sql.Stmt
}

// prepare prepares every statement on db.
func (st *sqliteStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		to   **sql.Stmt
		text string
	}{{&st.key, selectKey}, {&st.usage, selectUsage}, {&st.upsert, upsertUsage}, {&st.deleteUsage, deleteUsage}, {&st.insert, insertEnvelope}} {
		var err error
		if *p.to, err = db.PrepareContext(ctx, p.text); err != nil {
			return fmt.Errorf("prepare %q: %w", p.text, err)
		}
	}
	return nil
}

// usageScopes names the running totals an envelope from from to recipient
// counts in: its mailbox, its sender within the mailbox, all, its IP, and a
// stranger's the mailbox's room for strangers and its IP's share of it.
func usageScopes(recipient string, from Origin) [][2]string {
	sc := [][2]string{{"mailbox", recipient}, {"sender", recipient + " " + from.Address}, {"total", ""}}
	if from.IP != "" {
		sc = append(sc, [2]string{"ip", from.IP})
	}
	if from.Stranger {
		sc = append(sc, [2]string{"stranger", recipient})
		if from.IP != "" {
			sc = append(sc, [2]string{"stranger_ip", recipient + " " + from.IP})
		}
	}
	return sc
}

// readUsage reads one running total within tx.
func (s *SQLite) readUsage(ctx context.Context, tx *sql.Tx, scope, key string) (Usage, error) {
	var u Usage
	err := tx.StmtContext(ctx, s.stmts.usage).QueryRowContext(ctx, scope, key).Scan(&u.Envelopes, &u.Bytes)
	if errors.Is(err, sql.ErrNoRows) {
		return Usage{}, nil
	}
	return u, err
}

// addUsage adds n envelopes of size bytes (negative to remove) to each
// scope, deleting a total that reaches nothing.
func (s *SQLite) addUsage(ctx context.Context, tx *sql.Tx, scopes [][2]string, n int, size int64) error {
	upsert, del := tx.StmtContext(ctx, s.stmts.upsert), tx.StmtContext(ctx, s.stmts.deleteUsage)
	for _, sc := range scopes {
		if _, err := upsert.ExecContext(ctx, sc[0], sc[1], n, size); err != nil {
			return err
		}
		if n < 0 {
			if _, err := del.ExecContext(ctx, sc[0], sc[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// size is the request's whole envelope's size, what each copy is charged.
func (r *appendReq) size() int64 {
	if r.shared == nil {
		return int64(len(r.env))
	}
	return int64(len(r.env) + len(r.shared.Payload))
}

// appendTx appends one request's copies within tx, or refuses it. A
// request with a shared payload stores its head in each row and the
// payload once per transaction (payloads: those inserted so far, by what
// the requests point at; nil when none may be shared).
func (s *SQLite) appendTx(ctx context.Context, tx *sql.Tx, r *appendReq, payloads map[*SharedPayload]int64) error {
	var k []byte
	if err := tx.StmtContext(ctx, s.stmts.key).QueryRowContext(ctx, r.recipient).Scan(&k); errors.Is(err, sql.ErrNoRows) {
		return ErrNotRegistered
	} else if err != nil {
		return err
	}
	scopes := usageScopes(r.recipient, r.from)
	u := make(map[string]Usage, len(scopes))
	for _, sc := range scopes {
		v, err := s.readUsage(ctx, tx, sc[0], sc[1])
		if err != nil {
			return err
		}
		u[sc[0]] = v
	}
	size := r.size() * int64(r.copies)
	if err := s.limits.QuotaError(u["mailbox"], u["sender"], u["ip"], u["total"], r.from, r.copies, size); err != nil {
		return err
	}
	if err := s.limits.StrangerError(u["stranger"], u["stranger_ip"], r.from, r.copies, size); err != nil {
		return err
	}
	var payload int64
	if r.shared != nil {
		var ok bool
		if payload, ok = payloads[r.shared]; !ok {
			if err := tx.QueryRowContext(ctx, insertPayload, r.shared.Payload).Scan(&payload); err != nil {
				return err
			}
			payloads[r.shared] = payload
			r.stored += int64(len(r.shared.Payload))
		}
		if _, err := tx.ExecContext(ctx, refPayload, r.copies, payload); err != nil {
			return err
		}
	}
	ins := tx.StmtContext(ctx, s.stmts.insert)
	for range r.copies {
		var row int64
		if err := ins.QueryRowContext(ctx, r.recipient, r.env, r.from.Address, r.from.IP, time.Now().UnixNano(), r.from.Envelope[:], r.from.Stranger, payload).Scan(&row); err != nil {
			return err
		}
		r.rows = append(r.rows, uint64(row))
	}
	r.stored += int64(len(r.env)) * int64(r.copies)
	return s.addUsage(ctx, tx, scopes, r.copies, size)
}
