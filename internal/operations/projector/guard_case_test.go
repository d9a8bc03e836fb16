package projector_test

import (
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cutover"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

func requireState(t *testing.T, err error, state, fragment string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, state, db.SQLState(err), "error: %v", err)
	require.ErrorContains(t, err, fragment)
}

// The guard clauses of migration 00009 (finalization cases and their
// pending rows), each driven as the projector's least-privileged role
// (oceanway_operations) — the role the projector itself runs as here, so
// its grants are proved sufficient for every ordering — and, for DELETE,
// which the role is not granted at all, also as the owner (the trigger is
// the second guard):
// OP006.case-resolved-absorbing, OP006.case-update-not-resolve,
// OP006.case-resolution-fields, OP001.finalization-cases-no-delete,
// OP006.pending-taken-absorbing, OP006.pending-update-not-take,
// OP001.pending-case-resolutions-no-delete,
// OP001.pending-case-successors-no-delete; and the one-open-case-per-fence
// index (23505).
func TestGuard_OP6_FinalizationCaseClauses(t *testing.T) {
	t.Parallel()
	dbs := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), operationsschema.Line()}, MaxConns: 8})
	owner := dbs.Core()
	role := dbtest.RolePool(t, dbs.DSNs[boundary.Core], operationsschema.RoleOperations)
	p, err := projector.New(role, operationstest.Found().Wire(projector.Config{}))
	require.NoError(t, err)
	ctx := t.Context()
	fence := func(n, gens int) *operationstest.CaseFence {
		f, err := operationstest.NewCaseFence(ctx, role, n, gens)
		require.NoError(t, err)
		return f
	}
	// a: C1 resolved, C2 open. b: C2 waits as a pending successor, C1's
	// resolution as a pending resolution. c: a consumed pending resolution.
	// d: a materialized pending successor.
	a, b, c, d := fence(11, 2), fence(12, 2), fence(13, 1), fence(14, 2)
	for _, e := range []struct {
		f   *operationstest.CaseFence
		req bool
		g   int64
	}{{a, true, 1}, {a, false, 1}, {a, true, 2}, {b, true, 2}, {b, false, 1}, {c, false, 1}, {c, true, 1},
		{d, true, 2}, {d, false, 1}, {d, true, 1}} {
		ev := e.f.Resolved(e.g)
		if e.req {
			ev = e.f.Requested(e.g)
		}
		_, err := p.Consume(ctx, operationstest.DeliveryV1(ev))
		require.NoError(t, err, "the projector as %s", operationsschema.RoleOperations)
	}

	exec := func(pool *pgxpool.Pool, sql string, args ...any) error {
		_, err := pool.Exec(ctx, sql, args...)
		return err
	}
	const cases = "operations.finalization_cases"
	// OP006.case-resolved-absorbing: a resolved case closes once.
	requireState(t, exec(role, "UPDATE "+cases+" SET state = 'resolved' WHERE billing_finalization_fence_id = $1 AND reconciliation_generation = 1", a.FenceID),
		projector.SQLStateCaseTransition, "a case closes once")
	// OP006.case-update-not-resolve: an open case only moves to resolved.
	requireState(t, exec(role, "UPDATE "+cases+" SET state = 'open' WHERE billing_finalization_fence_id = $1 AND reconciliation_generation = 2", a.FenceID),
		projector.SQLStateCaseTransition, "may only move open → resolved")
	// OP006.case-resolution-fields: resolved carries its whole resolution.
	requireState(t, exec(role, "UPDATE "+cases+" SET state = 'resolved' WHERE billing_finalization_fence_id = $1 AND reconciliation_generation = 2", a.FenceID),
		pgerrcode.CheckViolation, "finalization_cases_resolution_fields")
	// The frozen columns are not the role's to update.
	requireState(t, exec(role, "UPDATE "+cases+" SET run_id = run_id WHERE billing_finalization_fence_id = $1", a.FenceID),
		pgerrcode.InsufficientPrivilege, "permission denied")
	// Never two open cases of one fence, whoever inserts.
	requireState(t, exec(role, `INSERT INTO `+cases+` SELECT (jsonb_populate_record(NULL::`+cases+`, to_jsonb(c) || jsonb_build_object(
			'reconciliation_case_ref', 'fcase-second-open', 'reconciliation_generation', 3, 'predecessor_generation', 2))).*
		FROM `+cases+` c WHERE billing_finalization_fence_id = $1 AND reconciliation_generation = 2`, a.FenceID),
		pgerrcode.UniqueViolation, "finalization_cases_one_open_per_fence")

	const resolutions, successors = "operations.pending_finalization_case_resolutions", "operations.pending_finalization_case_successors"
	// OP006.pending-taken-absorbing: a taken pending row is taken once.
	requireState(t, exec(role, "UPDATE "+resolutions+" SET status = 'consumed', consumed_at = now(), consumed_by_event_id = $2 WHERE billing_finalization_fence_id = $1",
		c.FenceID, c.RequestEventID(1)), projector.SQLStateCaseTransition, "is consumed already")
	requireState(t, exec(role, "UPDATE "+successors+" SET status = 'materialized', materialized_at = now(), materialized_by_event_id = $2 WHERE billing_finalization_fence_id = $1",
		d.FenceID, d.RequestEventID(1)), projector.SQLStateCaseTransition, "is materialized already")
	// OP006.pending-update-not-take: a pending row only moves to taken.
	requireState(t, exec(role, "UPDATE "+resolutions+" SET status = 'pending' WHERE billing_finalization_fence_id = $1", b.FenceID),
		projector.SQLStateCaseTransition, "may only move from pending to taken")
	requireState(t, exec(role, "UPDATE "+successors+" SET status = 'pending' WHERE billing_finalization_fence_id = $1", b.FenceID),
		projector.SQLStateCaseTransition, "may only move from pending to taken")

	// OP001.finalization-cases-no-delete, OP001.pending-case-resolutions-no-delete,
	// OP001.pending-case-successors-no-delete: no DELETE grant for the role,
	// and the trigger refuses the owner too.
	for _, table := range []string{cases, resolutions, successors} {
		requireState(t, exec(role, "DELETE FROM "+table), pgerrcode.InsufficientPrivilege, "permission denied")
		requireState(t, exec(owner, "DELETE FROM "+table), cutover.SQLStateInsertOnly, "on "+table+" is forbidden")
	}
}
