package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

var errInjected = errors.New("injected failure")

// recordPoints applies p with a hook that records every point and fails at
// before-persist, so that nothing is applied, and returns the points in the
// order they were first reached, after-persist included.
func recordPoints(t *testing.T, f *fixture, apply func() error) []string {
	t.Helper()
	var points []string
	f.hook = func(p string) error {
		if !slices.Contains(points, p) {
			points = append(points, p)
		}
		if strings.HasSuffix(p, "/before-persist") {
			return errInjected
		}
		return nil
	}
	defer func() { f.hook = nil }()
	if err := apply(); !errors.Is(err, errInjected) {
		t.Fatalf("apply failing at before-persist = %v, want the injected error", err)
	}
	last := points[len(points)-1]
	return append(points, strings.TrimSuffix(last, "before-persist")+"after-persist")
}

// failAt runs apply with a hook that fails the first time it reaches point.
func failAt(f *fixture, point string, apply func() error) (hit bool, err error) {
	f.hook = func(p string) error {
		if p == point && !hit {
			hit = true
			return fmt.Errorf("%w at %s", errInjected, p)
		}
		return nil
	}
	defer func() { f.hook = nil }()
	return hit, apply()
}

// TestFailpointErrors is the in-process half of the failpoint matrix: for
// every plan case it fails the plan at each of its points in turn and checks
// that the database is exactly as before (at after-persist: that the plan was
// applied), and that the plan then applies.
func TestFailpointErrors(t *testing.T) {
	ctx := context.Background()
	perKind := map[string]map[string]bool{}
	for _, c := range planCases() {
		t.Run(c.name, func(t *testing.T) {
			f, p := c.prepare(t)
			apply := func() error { _, err := f.db.Apply(ctx, p); return err }
			before := f.state(t)
			points := recordPoints(t, f, apply)
			if f.state(t) != before {
				t.Fatal("recording the points changed the database")
			}
			kind := p.Kind()
			if perKind[kind] == nil {
				perKind[kind] = map[string]bool{}
			}
			for _, point := range points {
				if !strings.HasPrefix(point, kind+"/") {
					t.Errorf("point %s is not named after the plan kind %s", point, kind)
				}
				perKind[kind][point] = true
				hit, err := failAt(f, point, apply)
				if !hit || !errors.Is(err, errInjected) {
					t.Fatalf("failing at %s: reached %v, Apply = %v; want the injected error", point, hit, err)
				}
				if strings.HasSuffix(point, "/after-persist") {
					if f.state(t) == before {
						t.Errorf("failing at %s: the plan was not applied, want it committed", point)
					}
					continue
				}
				if f.state(t) != before {
					t.Fatalf("failing at %s left changes behind", point)
				}
			}
			// Every point is distinct and the plan still applies whole.
			if len(points) < 5 {
				t.Errorf("points %v: want before-begin, a statement's two and the commit's two at least", points)
			}
		})
	}
	kinds := make([]string, 0, len(perKind))
	total := 0
	for k, ps := range perKind {
		kinds = append(kinds, k)
		total += len(ps)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("%-18s %3d points", k, len(perKind[k]))
	}
	t.Logf("%d distinct points over %d plan kinds", total, len(kinds))
	if total < 100 || len(kinds) < 10 {
		t.Errorf("%d points over %d kinds, want at least 100 over 10", total, len(kinds))
	}
}

// TestFailpointErrorsBatch fails a batch at each of its points: nothing of
// the batch may be applied.
func TestFailpointErrorsBatch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	row := f.stage(t)
	plans := []engine.Plan{
		sendPlan(t, bob, logicalID(3), "two", 1),
		receivePlan(row, bob, 2, engine.AckEffect{ID: idSent}),
		engine.Abandon{Recipient: bob, ID: logicalID(3), At: planAt},
	}
	apply := func() error { _, err := f.db.ApplyBatch(ctx, plans); return err }
	before := f.state(t)
	points := recordPoints(t, f, apply)
	for _, point := range points {
		hit, err := failAt(f, point, apply)
		if !hit || !errors.Is(err, errInjected) {
			t.Fatalf("failing at %s: reached %v, ApplyBatch = %v", point, hit, err)
		}
		if strings.HasSuffix(point, "/after-persist") {
			continue
		}
		var be *engine.BatchError
		if strings.Contains(point, "/stmt-") != errors.As(err, &be) {
			t.Errorf("failing at %s: %v, want a BatchError for a statement's point only", point, err)
		}
		if f.state(t) != before {
			t.Fatalf("failing at %s left changes behind", point)
		}
	}
	if n := len(points); n < 20 {
		t.Errorf("batch points %v, want the points of all three plans", points)
	}
	wantPeer(t, f, bob, identityKey('b'), 3, "receive")
}
