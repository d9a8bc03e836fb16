package catchup_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
)

// Issue 37: the catch-up's guard clauses (docs/guard-clauses.md), each
// driven by the least-privileged role that reaches it and asserted by its
// SQLSTATE and a fragment of its message no other clause of that code has,
// so the test fails when only that clause is disabled
// (go run ./scripts/guards mutate -run 'BC0').

// refusedAs runs stmts in one transaction as role ("" = the table owner)
// and returns the PostgreSQL error that refused it, at COMMIT included.
func refusedAs(t *testing.T, b *bundle, role string, stmts ...string) *pgconn.PgError {
	t.Helper()
	err := db.WithTx(t.Context(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
		if role != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	require.Error(t, err, "the forged write committed: %v", stmts)
	var pg *pgconn.PgError
	require.True(t, errors.As(err, &pg), "not a PostgreSQL error: %v", err)
	return pg
}

func requireClause(t *testing.T, pg *pgconn.PgError, code, fragment string) {
	t.Helper()
	require.Equal(t, code, pg.Code, "%s (%s)", pg.Message, pg.Detail)
	require.Contains(t, pg.Message, fragment, "SQLSTATE %s", pg.Code)
}

// insertableColumns lists a billing table's columns that an INSERT may
// name (not the generated ones).
func insertableColumns(t *testing.T, b *bundle, table string) []string {
	t.Helper()
	var cols []string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT array_agg(column_name::text ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = 'billing' AND table_name = $1 AND is_generated = 'NEVER'`, table).Scan(&cols))
	return cols
}

// The catch-up fence's guards (00020, 00024) on state the real catch-up
// built. The role has no DELETE and no UPDATE of the identity columns
// (42501): those clauses are the table owner's refusal.
func TestGuardClausesCatchUpFence(t *testing.T) {
	t.Parallel()
	b, refund, _ := caughtUpLedger(t)
	role := billingschema.RoleBilling
	dim := "'" + refund.SettlementDimensionID() + "'"

	// BC001.fences-no-delete
	requireClause(t, refusedAs(t, b, "", "DELETE FROM billing.settlement_catch_up_fences WHERE settlement_dimension_id = "+dim),
		catchup.CodeInsertOnly, "DELETE on billing.settlement_catch_up_fences is forbidden")
	// BC003.fence-identity
	requireClause(t, refusedAs(t, b, "", "UPDATE billing.settlement_catch_up_fences SET charge_dimension_key = 'tokens.other' WHERE settlement_dimension_id = "+dim),
		catchup.CodeFenceGraph, "identity is frozen")
	// BC003.fence-start: a copy of the fence for a new dimension at revision 2.
	cols := strings.Join(insertableColumns(t, b, "settlement_catch_up_fences"), ", ")
	requireClause(t, refusedAs(t, b, role, `INSERT INTO billing.settlement_catch_up_fences (`+cols+`)
		SELECT (x).`+strings.ReplaceAll(cols, ", ", ", (x).")+`
		  FROM (SELECT jsonb_populate_record(f, jsonb_build_object('settlement_dimension_id', gen_random_uuid(), 'fence_revision', 2)) AS x
		          FROM billing.settlement_catch_up_fences f WHERE settlement_dimension_id = `+dim+`) s`),
		catchup.CodeFenceGraph, "a catch-up fence starts at revision 1")
	// BC006.tokenless-not-reopen: a token-less update that is not the
	// consumer's reopen (the graph guard lets a bare revision step in).
	requireClause(t, refusedAs(t, b, role, `UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1,
		attempt_fencing_token = NULL WHERE settlement_dimension_id = `+dim),
		catchup.CodeFenced, "changed without a fencing token")
	// BC007.attempt-not-active: the next attempt of a caught-up fence's
	// generation (not claimable).
	nextAttempt := func(number string) string {
		return `INSERT INTO billing.settlement_catch_up_attempts (settlement_dimension_id, work_generation, attempt_number, fencing_token,
			    started_at, lease_expires_at)
			SELECT settlement_dimension_id, active_work_generation, ` + number + `, gen_random_uuid(), now(), now() + interval '1 minute'
			  FROM billing.settlement_catch_up_fences f WHERE settlement_dimension_id = ` + dim
	}
	requireClause(t, refusedAs(t, b, role, nextAttempt(`(SELECT COALESCE(max(a.attempt_number), 0) + 1 FROM billing.settlement_catch_up_attempts a
		WHERE a.settlement_dimension_id = f.settlement_dimension_id AND a.work_generation = f.active_work_generation)`)),
		catchup.CodeAttemptGraph, "is not of the fence's active, claimable generation")

	// A newer settlement input reopens the fence (pending_verification, the
	// next generation): an attempt that skips a number is refused.
	consumer, err := catchup.NewConsumer(b.pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second},
		Finalization: catchup.FinalizationFenceObserver{}})
	require.NoError(t, err)
	_, err = consumer.Consume(t.Context(), catchUpDelivery(inputEvent(refund, 3)))
	require.NoError(t, err)
	var state string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT coordination_state FROM billing.settlement_catch_up_fences
		WHERE settlement_dimension_id = `+dim).Scan(&state))
	require.Equal(t, billingc.CatchUpPendingVerification, state)
	// BC007.attempt-not-next
	requireClause(t, refusedAs(t, b, role, nextAttempt("5")), catchup.CodeAttemptGraph, "is not the next attempt of its generation")
}

// Insert-only catch-up facts (billing.catch_up_reject_change on UPDATE OR
// DELETE, 00020, 00023, 00024): the role has no UPDATE/DELETE grant on
// them (42501), so each trigger is the table owner's refusal. (Blocks:
// TestCatchUpAttemptBlockedOnOwnerConflictThenFixed, BC001.blocks-insert-only.)
func TestGuardClausesCatchUpInsertOnlyFacts(t *testing.T) {
	t.Parallel()
	b, _, _ := caughtUpLedger(t)
	for table, clause := range map[string]string{
		"settlement_catch_up_receipts": "BC001.receipts-insert-only",
		"settlement_catch_up_works":    "BC001.works-insert-only",
		"settlement_transitions":       "BC001.transitions-insert-only",
		"late_settlement_exposures":    "BC001.exposures-insert-only",
		"settlement_catch_up_finishes": "BC001.finishes-insert-only",
		"settlement_catch_up_attempts": "BC001.attempts-insert-only",
	} {
		var rows int
		require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing."+table).Scan(&rows))
		require.Positive(t, rows, "%s: billing.%s has a row to change", clause, table)
		column := insertableColumns(t, b, table)[0]
		requireClause(t, refusedAs(t, b, "", "UPDATE billing."+table+" SET "+column+" = "+column),
			catchup.CodeInsertOnly, "UPDATE on billing."+table+" is forbidden")
		requireClause(t, refusedAs(t, b, "", "DELETE FROM billing."+table),
			catchup.CodeInsertOnly, "DELETE on billing."+table+" is forbidden")
	}
}

// BI-2 (only a refund of a settled reservation posts automatically;
// reconcile_before_charge): the catch-up's ledger refuses anything else in
// Go, with its typed error, before the database's controlled writer
// (BL006.transition-not-refund) would.
func TestGuardClausesTransitionLedger(t *testing.T) {
	t.Parallel()
	b, refund, exposure := caughtUpLedger(t)
	refOf := func(d billingc.SettlementDimension) string {
		var ref string
		require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT transition_ref FROM billing.settlement_transitions
			WHERE settlement_dimension_id = $1 ORDER BY from_settlement_state_revision DESC LIMIT 1`, d.SettlementDimensionID()).Scan(&ref))
		return ref
	}
	refundRef, exposureRef := refOf(refund), refOf(exposure)

	// BL006.transition-not-refund: the controlled writer, called directly
	// by the role with the open exposure's transition.
	requireClause(t, refusedAs(t, b, billingschema.RoleBilling, "SELECT billing.post_settlement_transition('"+exposureRef+"', gen_random_uuid())"),
		billing.CodeLedgerUnjustified, "only a refund transition of a settled reservation posts automatically")

	post := func(tr *billingc.BillingSettlementTransition) error {
		return db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
			return catchup.TransitionPostings{}.PostSettlementTransitionTx(ctx, tx, tr)
		})
	}
	// BI-2.refund-only: the stored exposure transition and an adjustment
	// (a non-refund) through the catch-up's ledger: the typed error, no
	// database refusal.
	for _, tr := range []*billingc.BillingSettlementTransition{
		{Transition: strict.Quadruple{Ref: exposureRef}, Dimension: exposure, TransitionKind: billingc.TransitionLateSettlementExposure},
		{Transition: strict.Quadruple{Ref: exposureRef}, Dimension: exposure, TransitionKind: billingc.TransitionAdjustment},
	} {
		err := post(tr)
		require.ErrorIs(t, err, catchup.ErrTransitionNotPostable, tr.TransitionKind)
		require.ErrorContains(t, err, tr.TransitionKind)
		require.Empty(t, db.SQLState(err), "refused in Go, before the database")
	}

	// BI-2.reservation-settled: a refund naming a reservation that is still
	// reserved (a second run, admitted only).
	other := newRun(2)
	admit(t, b.admin, other)
	reserved := refund
	reserved.BillingReservationID, reserved.BillingAccountID, reserved.RunID = other.reservationID, other.accountID, other.runID
	err := post(&billingc.BillingSettlementTransition{Transition: strict.Quadruple{Ref: refundRef}, Dimension: reserved,
		TransitionKind: billingc.TransitionRefund})
	require.ErrorIs(t, err, catchup.ErrTransitionNotPostable)
	require.ErrorContains(t, err, "is reserved")
	require.Empty(t, db.SQLState(err), "refused in Go, before the database")

	// Nothing of it reached the ledger.
	require.Equal(t, map[string]string{"reservation_hold": "0", "settled_revenue": "180", "customer_wallet": "180"},
		b.balances(t, refund.BillingReservationID))
}
