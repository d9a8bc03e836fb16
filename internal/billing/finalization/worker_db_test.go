package finalization_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/finalization"
)

var stepTables = []string{"billing.finalization_input_manifests", "billing.finalization_owner_receipts",
	"billing.finalization_validation_bundles", "billing.finalization_decisions"}

func (k *core) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, k.admin.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// closedWorld admits the world, applies its closure and records every
// current input: the next Work run can decide.
func closedWorld(t *testing.T, k *core, w *world) {
	t.Helper()
	k.admit(t, w)
	k.settle(t, w, rejected, "attempt.not_dispatched")
	k.settle(t, w, dispatched, "text.input_tokens")
	k.settle(t, w, dispatched, "text.output_tokens")
	_, err := k.c.Consume(t.Context(), closureDelivery(t, w))
	require.NoError(t, err)
}

// BI-1: a failure injected after each write of the finalization
// transaction (the commit's ledger, event, committed fact, reservation,
// Work and fence steps, after every step of this package was stored)
// leaves no billing row of the finalization: no step, no posting, no fact,
// the reservation reserved and the Work runnable; the next run commits.
func TestBI1FailureAfterEachWriteLeavesNoRow(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1200", "333")
	closedWorld(t, k, w)
	injected := errors.New("injected failure")
	for _, step := range billing.CommitSteps {
		wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{Commit: billing.CommitOpts{
			AfterStep: func(_ context.Context, _ pgx.Tx, s string) error {
				if s == step {
					return injected
				}
				return nil
			}}}, finalization.Config{}, nil)
		_, err := wk.ProcessOne(t.Context())
		require.ErrorIs(t, err, injected, step)
		for _, table := range append(stepTables, "billing.finalization_committed", "billing.finalization_evaluations", "billing.settlement_catch_up_fences") {
			require.Zero(t, k.count(t, table), "%s after a failure at %s", table, step)
		}
		var groups int
		require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.ledger_posting_groups WHERE group_kind = 'finalization'`).Scan(&groups))
		require.Zero(t, groups, step)
		var state string
		require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT state FROM billing.reservation_states`).Scan(&state))
		require.Equal(t, "reserved", state, step)
	}
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, contract.DecisionSettleAndReleaseRemainder, r.Decision.Outcome)
	require.Equal(t, 1, k.count(t, "billing.finalization_committed"))
	require.Equal(t, 3, k.count(t, "billing.settlement_catch_up_fences"), "BI-3: one catch-up fence per settled dimension, in the same transaction")
	_, err = wk.ProcessOne(t.Context())
	require.ErrorIs(t, err, finalization.ErrNoWork, "success is absorbing: nothing left to run")
}

// BI-1 / issue 15: an evaluation that would require reconciliation (here:
// the target is above the reservation) writes no ledger row, never enters
// reconciliation_required, leaves the fence waiting with a visible reason
// and stores its manifest and decision (no bundle, no amounts).
func TestBI1ReconciliationIsRecordedNotCommitted(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1000000", "200000") // 1000 + 600 credits > 1500 reserved
	closedWorld(t, k, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, contract.DecisionReconciliationRequired, r.Decision.Outcome)
	require.Equal(t, contract.ReasonTargetAboveReservation, r.Decision.ReasonCode)
	var groups, fact int
	var fenceState, reservationState string
	var waiting *string
	require.NoError(t, k.admin.QueryRow(t.Context(), `
		SELECT (SELECT count(*) FROM billing.ledger_posting_groups WHERE group_kind = 'finalization'),
		       (SELECT count(*) FROM billing.finalization_committed),
		       f.coordination_state, f.waiting_reason, r.state
		  FROM billing.billing_finalization_fences f JOIN billing.reservation_states r USING (billing_reservation_id)`).
		Scan(&groups, &fact, &fenceState, &waiting, &reservationState))
	require.Zero(t, groups+fact, "no ledger, no fact")
	require.Equal(t, billing.FenceAwaitingFinalization, fenceState, "never reconciliation_required")
	require.NotNil(t, waiting)
	require.Equal(t, "reconciliation_deferred:target_above_reservation", *waiting)
	require.Equal(t, "reserved", reservationState)
	var decision string
	var bundle, settled *string
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT decision, bundle_ref, settled_amount::text FROM billing.finalization_decisions`).
		Scan(&decision, &bundle, &settled))
	require.Equal(t, contract.DecisionReconciliationRequired, decision)
	require.Nil(t, bundle)
	require.Nil(t, settled)
	_, err = wk.ProcessOne(t.Context())
	require.ErrorIs(t, err, finalization.ErrNoWork, "the fence waits for a new input")
}

// BI-1: the stored steps are insert-only: the least-privileged billing role
// has no UPDATE or DELETE grant (42501) and the trigger refuses even the
// owner (BL001); and PostgreSQL itself refuses a
// decision whose amounts do not add up or settle above the reservation.
func TestBI1StepsAreImmutableAsTheBillingRole(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1200", "333")
	closedWorld(t, k, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	_, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	for _, table := range stepTables {
		for _, stmt := range []string{"UPDATE " + table + " SET recorded_at = now()", "DELETE FROM " + table} {
			// The role holds no UPDATE or DELETE grant (42501); even the
			// owner is refused by the trigger (BL001).
			for pool, code := range map[*pgxpool.Pool]string{k.pool: pgerrcode.InsufficientPrivilege, k.admin: billing.CodeInsertOnly} {
				_, err := pool.Exec(t.Context(), stmt)
				var pg *pgconn.PgError
				require.ErrorAs(t, err, &pg, stmt)
				require.Equal(t, code, pg.Code, stmt)
			}
		}
	}
	// The copy of the stored decision, mutated, is refused by the table's
	// CHECKs (23514) before anything else: the guard that refuses any
	// decision for a committed fence (BL008) is switched off inside the
	// test's own transaction, which rolls back.
	for name, mutated := range map[string]string{
		"amounts do not add up":   `decision, reason_code, reserved_amount, 1, 1`,
		"settled above reserved":  `decision, reason_code, reserved_amount, 1600, -100`,
		"evaluation with amounts": `'blocked', 'inputs_not_closed', reserved_amount, settled_amount, released_amount`,
	} {
		err := pgx.BeginFunc(t.Context(), k.admin, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), `ALTER TABLE billing.finalization_decisions DISABLE TRIGGER finalization_decisions_guard`); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), `
				INSERT INTO billing.finalization_decisions (decision_ref, decision_schema_version, decision_digest_algorithm_version,
				       decision_digest, billing_finalization_fence_id, manifest_ref, bundle_ref, decision, reason_code, reserved_amount,
				       settled_amount, released_amount, decision_body)
				SELECT 'bfd-test-'||md5($1), decision_schema_version, decision_digest_algorithm_version, md5($1)||md5($1),
				       billing_finalization_fence_id, manifest_ref, bundle_ref, `+mutated+`, decision_body
				  FROM billing.finalization_decisions`, name)
			return err
		})
		var pg *pgconn.PgError
		require.ErrorAs(t, err, &pg, name)
		require.Equal(t, pgerrcode.CheckViolation, pg.Code, name)
	}
}

// BI-1: workers racing on the same fence in real concurrent sessions: the
// claim's row lock with SKIP LOCKED lets exactly one process the Work; the
// others find nothing runnable; one committed fact, nothing left to run.
func TestBI1ConcurrentWorkersCommitOnce(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1200", "333")
	closedWorld(t, k, w)
	const n = 4
	results := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
			<-start
			_, err := wk.ProcessOne(t.Context())
			results <- err
		}()
	}
	close(start)
	committedRuns := 0
	for i := 0; i < n; i++ {
		err := <-results
		if err == nil {
			committedRuns++
			continue
		}
		require.ErrorIs(t, err, finalization.ErrNoWork)
	}
	require.Equal(t, 1, committedRuns)
	require.Equal(t, 1, k.count(t, "billing.finalization_committed"))
	require.Equal(t, 1, k.count(t, "billing.finalization_decisions"))
}
