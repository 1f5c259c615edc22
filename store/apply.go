package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

var _ engine.Store = (*DB)(nil)

// Apply validates p and applies it in one BEGIN IMMEDIATE transaction, or not
// at all. A plan that does not hold together fails before the transaction
// with an error matching engine.ErrConflict (engine.ErrInvalidAddress for a
// malformed address); a durable state other than the one the plan was
// prepared from fails with engine.ErrConflict, or engine.ErrNotPending where
// the plan names a pending message that is not there.
func (db *DB) Apply(ctx context.Context, p engine.Plan) (engine.Receipt, error) {
	rs, _, err := db.applyPlans(ctx, []engine.Plan{p})
	if err != nil {
		return engine.Receipt{}, err
	}
	return rs[0], nil
}

// ApplyBatch applies plans in order in one transaction, each with its own
// receipt (group commit). If a plan fails, nothing of the batch is applied
// and the error is an *engine.BatchError naming it. A failure of the
// transaction itself (begin, commit, a failpoint at before-begin,
// before-persist or after-persist) names no plan and comes back unwrapped.
func (db *DB) ApplyBatch(ctx context.Context, plans []engine.Plan) ([]engine.Receipt, error) {
	if len(plans) == 0 {
		return nil, nil
	}
	rs, failed, err := db.applyPlans(ctx, plans)
	if err != nil {
		if failed >= 0 {
			return nil, &engine.BatchError{Index: failed, Err: err}
		}
		return nil, err
	}
	return rs, nil
}

// applyPlans validates every plan, then applies them in one transaction. On
// failure it returns the index of the failing plan, or -1 when the failure
// belongs to the transaction.
func (db *DB) applyPlans(ctx context.Context, plans []engine.Plan) (_ []engine.Receipt, failed int, _ error) {
	for i, p := range plans {
		if err := validate(p); err != nil {
			return nil, i, err
		}
	}
	kind := plans[0].Kind()
	if err := db.point(kind, "before-begin"); err != nil {
		return nil, -1, fmt.Errorf("store: apply %s: %w", kind, err)
	}
	t, err := db.beginImmediate(ctx)
	if err != nil {
		return nil, -1, err
	}
	defer t.rollback()
	t.now = db.now()
	rs := make([]engine.Receipt, len(plans))
	for i, p := range plans {
		t.kind, t.plan = p.Kind(), i
		if rs[i], err = t.apply(ctx, p); err != nil {
			return nil, i, fmt.Errorf("store: apply %s: %w", t.kind, err)
		}
		rs[i].Unforwarded, t.unforwarded = t.unforwarded, nil
	}
	if i, err := t.flushSessions(ctx); err != nil {
		return nil, i, fmt.Errorf("store: apply %s: %w", plans[i].Kind(), err)
	}
	if i, err := t.flushMarker(ctx); err != nil {
		return nil, i, fmt.Errorf("store: apply %s: %w", plans[i].Kind(), err)
	}
	t.kind = kind
	if err := t.point("before-persist"); err != nil {
		return nil, -1, fmt.Errorf("store: apply %s: %w", kind, err)
	}
	if err := t.persist(); err != nil {
		return nil, -1, err
	}
	// The transition is durable: an error from here on is that of a process
	// that stopped right after its commit.
	db.scheduleScrub()
	if err := db.point(kind, "after-persist"); err != nil {
		return nil, -1, fmt.Errorf("store: apply %s: committed, then %w", kind, err)
	}
	return rs, -1, nil
}

// apply runs one validated plan inside the transaction.
func (t *tx) apply(ctx context.Context, p engine.Plan) (engine.Receipt, error) {
	switch p := p.(type) {
	case engine.Bootstrap:
		return engine.Receipt{}, t.bootstrap(ctx, p)
	case engine.CreateAccount:
		return engine.Receipt{}, t.createAccount(ctx, p)
	case engine.UpdateDeviceList:
		return engine.Receipt{}, t.updateDeviceList(ctx, p)
	case engine.PublishPreKeys:
		return engine.Receipt{}, t.publishPreKeys(ctx, p)
	case engine.GroupSend:
		return t.groupSend(ctx, p)
	case engine.RosterUpdate:
		return t.rosterUpdate(ctx, p)
	case engine.Send:
		return t.send(ctx, p)
	case engine.Hold:
		return t.hold(ctx, p)
	case engine.PersonSend:
		return t.personSend(ctx, p)
	case engine.HoldPeerDeviceList:
		return engine.Receipt{}, t.holdPeerDeviceList(ctx, p)
	case engine.Retry:
		return t.retry(ctx, p)
	case engine.Stage:
		return t.stage(ctx, p)
	case engine.Receive:
		return t.receive(ctx, p)
	case engine.CollisionRetire:
		return t.collisionRetire(ctx, p)
	case engine.DropStaged:
		return t.dropStaged(ctx, p)
	case engine.Finalize:
		return t.finalize(ctx, p)
	case engine.AckAgain:
		return t.ackAgain(ctx, p)
	case engine.ChainAck:
		return t.chainAck(ctx, p)
	case engine.NeedChainAsk:
		return engine.Receipt{}, t.writeSession(ctx, p.Session)
	case engine.Abandon:
		return t.abandon(ctx, p)
	case engine.MarkTaken:
		return t.markTaken(ctx, p)
	case engine.AcceptIdentity:
		return t.acceptIdentity(ctx, p)
	case engine.Prune:
		return t.prune(ctx, p)
	case engine.MarkPresented:
		return engine.Receipt{}, t.markPresented(ctx, p)
	case engine.SetRelay:
		return engine.Receipt{}, t.setRelay(ctx, p)
	case engine.ResetSession:
		return t.resetSession(ctx, p)
	case engine.PinRelay:
		return engine.Receipt{}, t.pinRelay(ctx, p)
	case engine.SetContact:
		return engine.Receipt{}, t.setContact(ctx, p)
	case engine.SetDraft:
		return engine.Receipt{}, t.setDraft(ctx, p)
	case engine.AcceptRequest:
		return engine.Receipt{}, t.acceptRequest(ctx, p)
	case engine.RejectRequest:
		return engine.Receipt{}, t.rejectRequest(ctx, p)
	case engine.ImportBlock:
		return engine.Receipt{}, t.importBlock(ctx, p)
	case engine.SweepRequests:
		return t.sweepRequests(ctx, p)
	case engine.MarkBlockTold:
		return engine.Receipt{}, t.markBlockTold(ctx, p)
	case engine.Unblock:
		return engine.Receipt{}, t.unblock(ctx, p)
	case engine.ClearQuarantine:
		return t.clearQuarantine(ctx, p)
	case engine.UploadBegin:
		return engine.Receipt{}, t.uploadBegin(ctx, p)
	case engine.UploadEnd:
		return engine.Receipt{}, t.uploadEnd(ctx, p)
	case engine.ImportStart:
		return engine.Receipt{}, t.importStart(ctx, p)
	case engine.ImportRecords:
		return t.importRecords(ctx, p)
	case engine.LinkCut:
		return engine.Receipt{}, t.linkCut(ctx, p)
	case engine.GroupStateSend:
		return engine.Receipt{}, t.groupStateSend(ctx, p)
	}
	// validate refuses every other type first.
	panic(fmt.Sprintf("store: apply %T: unknown plan", p))
}

// point consults the failpoint hook at kind/name; an error aborts the
// transition.
func (db *DB) point(kind, name string) error {
	if db.failpoint == nil {
		return nil
	}
	full := kind + "/" + name
	if err := db.failpoint(full); err != nil {
		return fmt.Errorf("failpoint %s: %w: %w", full, engine.ErrInjected, err)
	}
	return nil
}

// point consults the failpoint hook at a point of the plan being applied.
func (t *tx) point(name string) error { return t.db.point(t.kind, name) }

// stmtPoint consults the failpoint hook before or after a named statement:
// "<kind>/stmt-<name>-<when>".
func (t *tx) stmtPoint(name, when string) error {
	if t.db.failpoint == nil {
		return nil
	}
	return t.point("stmt-" + name + "-" + when)
}

// run executes one named statement of a plan between its failpoints and
// returns the number of rows it changed. Names are stable and unique within
// a plan; a statement run once per row of a plan (a prekey, an envelope)
// passes the same points each time.
func (t *tx) run(ctx context.Context, name, query string, args ...any) (int64, error) {
	if err := t.stmtPoint(name, "before"); err != nil {
		return 0, err
	}
	r, err := t.exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, mapErr(err))
	}
	if err := t.stmtPoint(name, "after"); err != nil {
		return 0, err
	}
	return n, nil
}

// runOne executes a named statement that must change exactly one row; any
// other count fails with miss (the state was not what the plan expected).
func (t *tx) runOne(ctx context.Context, name string, miss error, query string, args ...any) (sql.Result, error) {
	if err := t.stmtPoint(name, "before"); err != nil {
		return nil, err
	}
	r, err := t.exec(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, mapErr(err))
	}
	if n != 1 {
		return nil, fmt.Errorf("%s: %d rows changed, want 1: %w", name, n, miss)
	}
	if err := t.stmtPoint(name, "after"); err != nil {
		return nil, err
	}
	return r, nil
}

// scan runs a named one-row read of a plan between its failpoints and
// reports whether there was a row.
func (t *tx) scan(ctx context.Context, name, query string, args []any, dest ...any) (bool, error) {
	if err := t.stmtPoint(name, "before"); err != nil {
		return false, err
	}
	err := t.QueryRowContext(ctx, query, args...).Scan(dest...)
	found := true
	switch {
	case errors.Is(err, sql.ErrNoRows):
		found = false
	case err != nil:
		return false, fmt.Errorf("%s: %w", name, mapErr(err))
	}
	if err := t.stmtPoint(name, "after"); err != nil {
		return false, err
	}
	return found, nil
}
