package billing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/db"
)

// Issue 37: every refusal clause of billing's guards (docs/guard-clauses.md)
// is driven here, or in the tests that name it, by the least-privileged role
// that reaches it, and the assertion names the clause: its SQLSTATE and a
// fragment of its message (or DETAIL) no other clause of that code has, so
// the test fails when only that clause is disabled
// (go run ./scripts/guards mutate -run 'BL00').

const (
	roleOwner     = ""                   // the table owner (the migrating superuser)
	roleAdmission = "oceanway_admission" // opens a reservation's billing rows
)

var roleBilling = billingschema.RoleBilling

// refusedAs runs stmts in one transaction as role (roleOwner: the table
// owner) and returns the PostgreSQL error that refused it, at COMMIT
// included.
func refusedAs(t *testing.T, b *bundle, role string, stmts ...string) *pgconn.PgError {
	t.Helper()
	err := db.WithTx(t.Context(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
		if role != roleOwner {
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

// requireClause asserts the refusal is the clause's own: its SQLSTATE and a
// fragment of its message or DETAIL.
func requireClause(t *testing.T, pg *pgconn.PgError, code, fragment string) {
	t.Helper()
	require.Equal(t, code, pg.Code, "%s (%s)", pg.Message, pg.Detail)
	require.Contains(t, pg.Message+" | "+pg.Detail, fragment, "SQLSTATE %s", pg.Code)
}

func quoted(s string) string { return "'" + s + "'" }

// guardRuns: committed (settled 100 of 2500 by the real commit), pending
// (closed: fence pending_evaluation at generation 2, closure applied) and
// admitted (fence pending_evaluation at generation 1, no closure).
func guardRuns(t *testing.T) (b *bundle, committed, pending, admitted run) {
	t.Helper()
	b = setup(t)
	committed, pending, admitted = newRun(1), newRun(2), newRun(3)
	b.closed(t, committed)
	_, err := b.commit(t, b.decision(t, committed, billingc.SuccessSettleAndReleaseRemainder, "100", "2400"), billing.CommitOpts{})
	require.NoError(t, err)
	b.closed(t, pending)
	admit(t, b.admin, admitted)
	return b, committed, pending, admitted
}

// The finalization fence's graph (billing.guard_fence, 00002). The role
// has no DELETE and no UPDATE of the identity columns (42501), so those two
// clauses are the owner's refusal; a fence is inserted by admission only.
func TestGuardClausesFinalizationFence(t *testing.T) {
	t.Parallel()
	b, committed, pending, admitted := guardRuns(t)
	cf, pf, af := quoted(committed.fenceID), quoted(pending.fenceID), quoted(admitted.fenceID)
	upd := "UPDATE billing.billing_finalization_fences SET "

	// BL001.fence-no-delete
	requireClause(t, refusedAs(t, b, roleOwner, "DELETE FROM billing.billing_finalization_fences WHERE billing_finalization_fence_id = "+af),
		billing.CodeInsertOnly, "DELETE on a finalization fence")
	// BL002.fence-start: admission's insert of a fence at revision 2.
	requireClause(t, refusedAs(t, b, roleAdmission, `INSERT INTO billing.billing_finalization_fences
		SELECT (jsonb_populate_record(f, jsonb_build_object('billing_finalization_fence_id', gen_random_uuid(), 'finalization_fence_revision', 2))).*
		  FROM billing.billing_finalization_fences f WHERE billing_finalization_fence_id = `+af),
		billing.CodeTransitionRefused, "a fence starts at revision 1")
	// BL002.fence-identity
	requireClause(t, refusedAs(t, b, roleOwner, upd+"run_id = gen_random_uuid() WHERE billing_finalization_fence_id = "+pf),
		billing.CodeTransitionRefused, "identity never changes")
	// BL002.fence-committed-absorbing
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		coordination_state = 'awaiting_finalization', waiting_reason = 'x', committed_ref = NULL WHERE billing_finalization_fence_id = `+cf),
		billing.CodeTransitionRefused, "is committed (absorbing)")
	// BL002.fence-revision-step
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 2,
		coordination_state = 'awaiting_finalization', active_work_generation = NULL, waiting_reason = 'x' WHERE billing_finalization_fence_id = `+pf),
		billing.CodeTransitionRefused, "(must be +1)")
	// BL003.case-request-row: entering a case generation without its
	// request row (issue 31: the decision writes it first).
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		coordination_state = 'reconciliation_required', active_work_generation = NULL, reconciliation_generation = 1,
		reconciliation_case_ref = 'fcase-x', case_identity_ref = 'x', case_identity_schema_version = '1',
		case_identity_digest_algorithm_version = 'jcs-sha256-v1', case_identity_digest = repeat('0', 64)
		WHERE billing_finalization_fence_id = `+pf),
		billing.CodeReconciliationGuard, "needs the next case generation's request")
	// BL003.reconciliation-exit: a fence in a case generation does not
	// leave it by any write of its own (only its applied resolution will).
	inCase := newRun(4)
	b.closed(t, inCase)
	_, err := b.reconcile(t, inCase, caseOf(inCase, 1))
	require.NoError(t, err)
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		coordination_state = 'awaiting_finalization', waiting_reason = 'x' WHERE billing_finalization_fence_id = `+quoted(inCase.fenceID)),
		billing.CodeReconciliationGuard, "only its applied resolution reopens it")
	// BL003.case-binding: the case columns move only with the entrance.
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		coordination_state = 'awaiting_finalization', active_work_generation = NULL, waiting_reason = 'x', reconciliation_generation = 1,
		reconciliation_case_ref = 'fcase-x', case_identity_ref = 'x', case_identity_schema_version = '1',
		case_identity_digest_algorithm_version = 'jcs-sha256-v1', case_identity_digest = repeat('0', 64)
		WHERE billing_finalization_fence_id = `+pf),
		billing.CodeReconciliationGuard, "case binding changes only when it enters")
	// BL002.fence-generation-step
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		latest_work_generation = latest_work_generation + 2, active_work_generation = latest_work_generation + 2
		WHERE billing_finalization_fence_id = `+pf),
		billing.CodeTransitionRefused, "work generation 2 → 4")
	// BL002.fence-graph: pending_evaluation again without a new generation.
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1
		WHERE billing_finalization_fence_id = `+pf),
		billing.CodeTransitionRefused, "is not in the graph")
	// BL002.fence-watermark-backward
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		closure_watermark_state = 'none', coordination_state = 'awaiting_finalization', active_work_generation = NULL, waiting_reason = 'x'
		WHERE billing_finalization_fence_id = `+pf),
		billing.CodeTransitionRefused, "a watermark moved backwards")
	// BL002.fence-closure-without-row: a new generation with the closure
	// watermark applied but no closure row.
	requireClause(t, refusedAs(t, b, roleBilling, upd+`finalization_fence_revision = finalization_fence_revision + 1,
		latest_work_generation = 2, active_work_generation = 2, closure_watermark_state = 'applied'
		WHERE billing_finalization_fence_id = `+af),
		billing.CodeTransitionRefused, "without its closure row")
}

// The Work's and the reservation's graphs (billing.guard_work,
// billing.guard_reservation, 00002). DELETE and the content/identity
// columns are not the role's to write (42501): those clauses are the
// owner's refusal; reservation states are inserted by admission only.
func TestGuardClausesWorkAndReservation(t *testing.T) {
	t.Parallel()
	b, committed, pending, admitted := guardRuns(t)
	cr, pf, af, ar := quoted(committed.reservationID), quoted(pending.fenceID), quoted(admitted.fenceID), quoted(admitted.reservationID)

	// BL001.work-no-delete
	requireClause(t, refusedAs(t, b, roleOwner, "DELETE FROM billing.billing_finalization_works WHERE billing_finalization_fence_id = "+af),
		billing.CodeInsertOnly, "DELETE on a finalization Work")
	// BL002.work-start: a generation 3 that starts waiting.
	requireClause(t, refusedAs(t, b, roleBilling, `INSERT INTO billing.billing_finalization_works
		SELECT (jsonb_populate_record(w, jsonb_build_object('work_generation', 3, 'work_state', 'waiting',
		        'waiting_reason', 'closure_event_not_applied'))).*
		  FROM billing.billing_finalization_works w WHERE billing_finalization_fence_id = `+pf+` AND work_generation = 2`),
		billing.CodeTransitionRefused, "Work generation 3 cannot start as waiting")
	// BL001.work-content
	requireClause(t, refusedAs(t, b, roleOwner, `UPDATE billing.billing_finalization_works SET work_body = work_body || ' '
		WHERE billing_finalization_fence_id = `+pf+` AND work_generation = 2`),
		billing.CodeInsertOnly, "a Work's content never changes")
	// BL002.work-graph: a committed Work runnable again.
	requireClause(t, refusedAs(t, b, roleBilling, `UPDATE billing.billing_finalization_works SET work_state = 'pending', finished_at = NULL
		WHERE work_state = 'committed'`),
		billing.CodeTransitionRefused, "Work state committed → pending is not in the graph")

	// BL001.reservation-no-delete
	requireClause(t, refusedAs(t, b, roleOwner, "DELETE FROM billing.reservation_states WHERE billing_reservation_id = "+ar),
		billing.CodeInsertOnly, "DELETE on a reservation state")
	// BL002.reservation-start: admission's insert of a settled reservation.
	requireClause(t, refusedAs(t, b, roleAdmission, `INSERT INTO billing.reservation_states
		SELECT (jsonb_populate_record(r, jsonb_build_object('state', 'settled'))).*
		  FROM billing.reservation_states r WHERE billing_reservation_id = `+ar),
		billing.CodeTransitionRefused, "a reservation starts reserved")
	// BL002.reservation-identity
	requireClause(t, refusedAs(t, b, roleOwner, `UPDATE billing.reservation_states SET economic_identity = '{"kind":"money"}'
		WHERE billing_reservation_id = `+ar),
		billing.CodeTransitionRefused, "identity and reserved amount never change")
	// BL002.reservation-absorbing: the settled reservation reserved again.
	requireClause(t, refusedAs(t, b, roleBilling, `UPDATE billing.reservation_states SET state = 'reserved', settled_amount = NULL,
		released_amount = NULL, committed_ref = NULL, finalized_at = NULL WHERE billing_reservation_id = `+cr),
		billing.CodeTransitionRefused, "(absorbing)")
}

// BL005 (billing.check_finalized_reservation, 00041): a finalized
// reservation's ledger adds up, each part its own clause. The check is
// deferred and runs after the posting groups' own proofs (BL006/BL007 refuse
// a forged finalization first), so each case sets it IMMEDIATE: it then
// answers at the reservation's UPDATE, against the ledger as posted. The
// role's writers keep revenue = wallet and empty the hold only with a
// finalization group, so the wallet and group clauses are reached by the
// table owner, who may write postings directly.
func TestGuardClausesFinalizedReservationLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pending := newRun(2)
	b.closed(t, pending)
	res := quoted(pending.reservationID)
	immediate := "SET CONSTRAINTS billing.reservation_states_ledger IMMEDIATE"
	finalize := func(settled, released string) string {
		return "UPDATE billing.reservation_states SET state = 'settled', settled_amount = " + settled + ", released_amount = " + released +
			", committed_ref = 'bfc-none', finalized_at = now() WHERE billing_reservation_id = " + res
	}
	group := quoted(id("guard-group"))
	post := func(settled, released string) string {
		return "SELECT billing.post_finalization(" + res + ", " + group + ", " + settled + ", " + released + ", now())"
	}
	// line appends a posting to the reservation's group of kind.
	line := func(kind, no, account, direction, amount string) string {
		return `INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
			account_kind, direction, amount, posted_at)
			SELECT g.posting_group_id, ` + no + `, g.billing_reservation_id, r.billing_account_id, g.economic_identity, '` + account + `', '` +
			direction + `', ` + amount + `, now()
			  FROM billing.ledger_posting_groups g JOIN billing.reservation_states r USING (billing_reservation_id)
			 WHERE g.billing_reservation_id = ` + res + ` AND g.group_kind = '` + kind + `'`
	}

	// BL005.hold-not-empty: settled with nothing posted, the hold still 2500.
	requireClause(t, refusedAs(t, b, roleBilling, immediate, finalize("100", "2400")),
		billing.CodeLedgerMismatch, "the reservation hold is not empty")
	// BL005.revenue-not-settled: the ledger posted 100, the reservation says 200.
	requireClause(t, refusedAs(t, b, roleBilling, post("100", "2400"), immediate, finalize("200", "2300")),
		billing.CodeLedgerMismatch, "settled revenue is not the settled amount")
	// BL005.wallet-not-settled: one more wallet credit in the finalization
	// group (the owner; the group's proof, BL006, would answer at commit).
	requireClause(t, refusedAs(t, b, roleOwner, post("100", "2400"),
		line("finalization", "9", "customer_wallet", "credit", "1"), immediate, finalize("100", "2400")),
		billing.CodeLedgerMismatch, "the wallet does not keep exactly the settled amount")
	// BL005.no-finalization-group: the hold group itself emptied back to the
	// wallet (the owner), the reservation released: the amounts add up, but
	// no finalization group posted them.
	requireClause(t, refusedAs(t, b, roleOwner, line("reservation_hold", "3", "reservation_hold", "debit", "2500"),
		line("reservation_hold", "4", "customer_wallet", "credit", "2500"),
		immediate, "UPDATE billing.reservation_states SET state = 'released', settled_amount = 0, released_amount = 2500, "+
			"committed_ref = 'bfc-none', finalized_at = now() WHERE billing_reservation_id = "+res),
		billing.CodeLedgerMismatch, "no finalization posting group")
	// BL005.no-committed-fact: the ledger adds up, the committed fact it
	// names does not exist.
	requireClause(t, refusedAs(t, b, roleBilling, post("100", "2400"), immediate, finalize("100", "2400")),
		billing.CodeLedgerMismatch, "no committed fact names the reservation with these amounts")
}

// The settlement-input watermark (billing.guard_settlement_watermark,
// 00002): DELETE and the dimension's columns are the owner's refusal (the
// role has no grant, 42501).
func TestGuardClausesSettlementWatermark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pending := newRun(2)
	b.closed(t, pending)
	_, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.SettlementAdvance, error) {
		return billing.ApplySettlementInputTx(ctx, tx, pending.settlement(1, 3, ""))
	})
	require.NoError(t, err)

	// BL001.watermark-no-delete
	requireClause(t, refusedAs(t, b, roleOwner, "DELETE FROM billing.settlement_input_watermarks"),
		billing.CodeInsertOnly, "DELETE on a settlement-input watermark")
	// BL002.watermark-start
	requireClause(t, refusedAs(t, b, roleBilling, `INSERT INTO billing.settlement_input_watermarks
		SELECT (jsonb_populate_record(w, jsonb_build_object('settlement_dimension_id', gen_random_uuid(), 'inbox_revision', 2))).*
		  FROM billing.settlement_input_watermarks w`),
		billing.CodeTransitionRefused, "a watermark starts at inbox revision 1")
	// BL002.watermark-dimension
	requireClause(t, refusedAs(t, b, roleOwner, "UPDATE billing.settlement_input_watermarks SET run_step_id = gen_random_uuid()"),
		billing.CodeTransitionRefused, "a watermark's dimension never changes")
	// BL002.watermark-monotonic
	requireClause(t, refusedAs(t, b, roleBilling,
		"UPDATE billing.settlement_input_watermarks SET settlement_input_state_version = 2, inbox_revision = inbox_revision + 1"),
		billing.CodeTransitionRefused, "(monotonic)")
}

// The ledger's proofs and controlled writers (00040) and the committed
// fact's proof. The role cannot INSERT ledger rows (42501): the group
// proofs are reached by the table owner's direct postings.
func TestGuardClausesLedgerProofs(t *testing.T) {
	t.Parallel()
	b, committed, pending, _ := guardRuns(t)
	cr, pr, pf := quoted(committed.reservationID), quoted(pending.reservationID), quoted(pending.fenceID)
	group := quoted(id("guard-group"))
	newGroup := "INSERT INTO billing.ledger_posting_groups VALUES (" + group + ", " + pr + `, 'finalization', '{"kind":"credits"}', now())`
	line := func(no, account, direction, amount, identity string) string {
		return "INSERT INTO billing.ledger_postings VALUES (" + group + ", " + no + ", " + pr + ", '" + pending.accountID + "', '" + identity +
			"', '" + account + "', '" + direction + "', " + amount + ", now())"
	}
	credits := `{"kind":"credits"}`

	// BL004.group-no-line
	requireClause(t, refusedAs(t, b, roleOwner, newGroup), billing.CodeLedgerUnbalanced, "has no line")
	// BL004.group-unbalanced
	requireClause(t, refusedAs(t, b, roleOwner, newGroup, line("1", "reservation_hold", "debit", "100", credits),
		line("2", "settled_revenue", "credit", "99", credits)), billing.CodeLedgerUnbalanced, "is not balanced")
	// BL004.group-off-identity
	requireClause(t, refusedAs(t, b, roleOwner, newGroup, line("1", "reservation_hold", "debit", "100", credits),
		line("2", "settled_revenue", "credit", "100", `{"kind":"money","currency":"EUR"}`)),
		billing.CodeLedgerUnbalanced, "off its reservation's account or economic identity")
	// BL006.group-off-fact: balanced, on its identity, no committed fact.
	requireClause(t, refusedAs(t, b, roleOwner, newGroup, line("1", "reservation_hold", "debit", "100", credits),
		line("2", "settled_revenue", "credit", "100", credits)),
		billing.CodeLedgerUnjustified, "is not exactly the amounts of the fact that justifies it")
	// BL006.hold-not-reserved: admission's one writer on a settled reservation.
	requireClause(t, refusedAs(t, b, roleAdmission, "SELECT billing.post_reservation_hold("+cr+", gen_random_uuid(), now())"),
		billing.CodeLedgerUnjustified, "a hold needs a reserved reservation")
	// BL006.finalization-off-reservation: 100 + 100 of 2500.
	requireClause(t, refusedAs(t, b, roleBilling, "SELECT billing.post_finalization("+pr+", gen_random_uuid(), 100, 100, now())"),
		billing.CodeLedgerUnjustified, "settles + releases its reserved amount")
	// BL007.committed-unproven: a committed fact on the pending fence, bound
	// to its hold group, nothing committed with it.
	requireClause(t, refusedAs(t, b, roleBilling, `INSERT INTO billing.finalization_committed (committed_ref, committed_schema_version,
		    committed_digest_algorithm_version, committed_digest, billing_reservation_id, billing_finalization_fence_id, work_generation,
		    billing_finalization_operation_id, finalization_fence_revision, decision, reserved_amount, settled_amount, released_amount,
		    posting_group_id, event_id, event_envelope_sha256, committed_body, committed_at)
		SELECT 'bfc-forged', '1', 'jcs-sha256-v1', repeat('a', 64), f.billing_reservation_id, f.billing_finalization_fence_id,
		       f.latest_work_generation, w.billing_finalization_operation_id, f.finalization_fence_revision + 1, 'settle_and_release_remainder',
		       2500, 100, 2400, g.posting_group_id, gen_random_uuid(), repeat('b', 64), '{}', now()
		  FROM billing.billing_finalization_fences f
		  JOIN billing.billing_finalization_works w ON w.billing_finalization_fence_id = f.billing_finalization_fence_id
		   AND w.work_generation = f.latest_work_generation
		  JOIN billing.ledger_posting_groups g ON g.billing_reservation_id = f.billing_reservation_id AND g.group_kind = 'reservation_hold'
		 WHERE f.billing_finalization_fence_id = `+pf),
		billing.CodeCommittedUnproven, "does not commit with its fence committed with it at its revision")
}

// Insert-only facts (billing.reject_change on UPDATE OR DELETE, 00001 and
// 00030): the role has no UPDATE/DELETE grant on them (42501), so each
// trigger is the table owner's refusal.
func TestGuardClausesInsertOnlyFacts(t *testing.T) {
	t.Parallel()
	b, _, _, _ := guardRuns(t)
	// An evaluation (a fourth run waiting for reconciliation) and an owner
	// receipt, so every table has a row.
	waiting := newRun(4)
	b.closed(t, waiting)
	d := b.decision(t, waiting, billingc.SuccessReleaseAll, "0", "2500")
	_, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, billing.Evaluation{FenceID: waiting.fenceID, WorkGeneration: d.WorkGeneration,
			OperationID: d.OperationID, Outcome: billing.EvaluationReconciliationDeferred, ReasonCode: "target_above_reservation",
			ReasonDetail: "target above reservation", DecisionObject: &d.DecisionObject})
	})
	require.NoError(t, err)
	// A case request (a fifth run in reconciliation_required).
	inCase := newRun(5)
	b.closed(t, inCase)
	_, err = b.reconcile(t, inCase, caseOf(inCase, 1))
	require.NoError(t, err)
	// Its resolution applied and consumed by the coordinator (a consumed
	// grant, an applied fact, a resolution watermark).
	rs := newResolver(t)
	c := reconciliation.Case{ReconciliationCaseRef: caseOf(inCase, 1).CaseRef, ReconciliationGeneration: 1, Identity: caseOf(inCase, 1).Identity,
		BillingAccountID: inCase.accountID, BillingReservationID: inCase.reservationID, RunID: inCase.runID, FenceID: inCase.fenceID}
	cmd, _ := rs.command(t, c, time.Now())
	applied, err := b.apply(t, rs, cmd)
	require.NoError(t, err)
	// BL003.resolution-current-case: a second resolution row at another
	// fence revision (the trigger runs before the keys are checked).
	requireClause(t, refusedAs(t, b, roleBilling, `INSERT INTO billing.finalization_reconciliation_resolutions
		SELECT (jsonb_populate_record(r, jsonb_build_object('finalization_fence_revision', r.finalization_fence_revision + 1))).*
		  FROM billing.finalization_reconciliation_resolutions r`),
		billing.CodeReconciliationGuard, "applies to its fence's current case generation")
	_, err = b.deliver(t, b.resolutionEvent(t, applied.EventID))
	require.NoError(t, err)
	_, err = b.admin.Exec(t.Context(), `INSERT INTO billing.finalization_owner_receipts (receipt_ref, receipt_kind, receipt_schema_version,
		    receipt_digest_algorithm_version, receipt_digest, manifest_ref, receipt_body)
		SELECT 'ror-guard', 'RunExecutionFinalizationReceipt@1', '1', 'jcs-sha256-v1', repeat('a', 64), manifest_ref, '{}'
		  FROM billing.finalization_input_manifests LIMIT 1`)
	require.NoError(t, err)

	for table, clause := range map[string]string{
		"billing_finalization_trigger_snapshots":  "BL001.trigger-snapshots-immutable",
		"closure_watermarks":                      "BL001.closure-watermarks-immutable",
		"ledger_posting_groups":                   "BL001.posting-groups-immutable",
		"ledger_postings":                         "BL001.postings-immutable",
		"finalization_evaluations":                "BL001.evaluations-immutable",
		"finalization_committed":                  "BL001.committed-immutable",
		"coordinator_receipts":                    "BL001.coordinator-receipts-immutable",
		"finalization_input_manifests":            "BL001.input-manifests-immutable",
		"finalization_owner_receipts":             "BL001.owner-receipts-immutable",
		"finalization_validation_bundles":         "BL001.validation-bundles-immutable",
		"finalization_decisions":                  "BL001.decisions-immutable",
		"finalization_reconciliation_requests":    "BL001.reconciliation-requests-immutable",
		"consumed_command_grants":                 "BL001.consumed-grants-immutable",
		"finalization_reconciliation_resolutions": "BL001.resolutions-immutable",
		"resolution_watermarks":                   "BL001.resolution-watermarks-immutable",
	} {
		var rows int
		require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing."+table).Scan(&rows))
		require.Positive(t, rows, "%s: billing.%s has a row to change", clause, table)
		var column string
		require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT column_name FROM information_schema.columns
			WHERE table_schema = 'billing' AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position LIMIT 1`, table).Scan(&column))
		requireClause(t, refusedAs(t, b, roleOwner, "UPDATE billing."+table+" SET "+column+" = "+column),
			billing.CodeInsertOnly, "UPDATE on billing."+table+" is forbidden")
		requireClause(t, refusedAs(t, b, roleOwner, "DELETE FROM billing."+table),
			billing.CodeInsertOnly, "DELETE on billing."+table+" is forbidden")
	}
}

// BL007 (billing.prove_finalization_committed, 00040): a committed
// finalization fact proves at commit that everything it states commits with
// it; each missing piece is its own branch, checked in order. The role
// forges the finalization of the pending run piece by piece, each case one
// piece further, so each branch is the first to miss.
func TestGuardClausesCommittedFactProof(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pending := newRun(2)
	b.closed(t, pending)
	pr, pf := quoted(pending.reservationID), quoted(pending.fenceID)
	group := quoted(id("guard-group"))
	fact := func(postingGroup string) string {
		return `INSERT INTO billing.finalization_committed (committed_ref, committed_schema_version, committed_digest_algorithm_version,
			    committed_digest, billing_reservation_id, billing_finalization_fence_id, work_generation, billing_finalization_operation_id,
			    finalization_fence_revision, decision, reserved_amount, settled_amount, released_amount, posting_group_id, event_id,
			    event_envelope_sha256, committed_body, committed_at)
			SELECT 'bfc-guard', '1', 'jcs-sha256-v1', repeat('a', 64), f.billing_reservation_id, f.billing_finalization_fence_id,
			       f.latest_work_generation, w.billing_finalization_operation_id, f.finalization_fence_revision + 1,
			       'settle_and_release_remainder', 2500, 100, 2400, ` + postingGroup + `, gen_random_uuid(), repeat('b', 64),
			       '{"billingFinalizationDecisionRef":"bfd-guard"}', now()
			  FROM billing.billing_finalization_fences f
			  JOIN billing.billing_finalization_works w ON w.billing_finalization_fence_id = f.billing_finalization_fence_id
			   AND w.work_generation = f.latest_work_generation
			 WHERE f.billing_finalization_fence_id = ` + pf
	}
	holdGroup := `(SELECT posting_group_id FROM billing.ledger_posting_groups WHERE billing_reservation_id = ` + pr +
		` AND group_kind = 'reservation_hold')`
	fenceCommitted := `UPDATE billing.billing_finalization_fences SET finalization_fence_revision = finalization_fence_revision + 1,
		coordination_state = 'committed', active_work_generation = NULL, committed_ref = 'bfc-guard' WHERE billing_finalization_fence_id = ` + pf
	workCommitted := `UPDATE billing.billing_finalization_works SET work_state = 'committed', finished_at = now()
		WHERE billing_finalization_fence_id = ` + pf + ` AND work_state = 'pending'`
	reservationSettled := `UPDATE billing.reservation_states SET state = 'settled', settled_amount = 100, released_amount = 2400,
		committed_ref = 'bfc-guard', finalized_at = now() WHERE billing_reservation_id = ` + pr
	postFinalization := "SELECT billing.post_finalization(" + pr + ", " + group + ", 100, 2400, now())"
	decision := []string{`INSERT INTO billing.finalization_input_manifests (manifest_ref, manifest_schema_version,
		    manifest_digest_algorithm_version, manifest_digest, billing_finalization_fence_id, billing_reservation_id, dimension_count,
		    target_total, manifest_body)
		VALUES ('fim-guard', '1', 'jcs-sha256-v1', repeat('d', 64), ` + pf + `, ` + pr + `, 0, 100, '{}')`,
		`INSERT INTO billing.finalization_validation_bundles (bundle_ref, bundle_schema_version, bundle_digest_algorithm_version,
		    bundle_digest, manifest_ref, bundle_body)
		VALUES ('fvb-guard', '1', 'jcs-sha256-v1', repeat('e', 64), 'fim-guard', '{}')`,
		`INSERT INTO billing.finalization_decisions (decision_ref, decision_schema_version, decision_digest_algorithm_version,
		    decision_digest, billing_finalization_fence_id, manifest_ref, bundle_ref, decision, reserved_amount, settled_amount,
		    released_amount, decision_body)
		VALUES ('bfd-guard', '1', 'jcs-sha256-v1', repeat('f', 64), ` + pf + `, 'fim-guard', 'fvb-guard', 'settle_and_release_remainder',
		    2500, 100, 2400, '{}')`}
	with := func(first []string, rest ...string) []string { return append(append([]string{}, first...), rest...) }

	for _, c := range []struct {
		clause, missing string
		stmts           []string
	}{
		{"BL007.fence-not-committed", "its fence committed with it at its revision", []string{fact(holdGroup)}},
		{"BL007.work-not-committed", "its Work committed", []string{fact(holdGroup), fenceCommitted}},
		{"BL007.reservation-not-terminal", "its reservation terminal with its amounts", []string{fact(holdGroup), fenceCommitted, workCommitted}},
		// The fact names the hold group; the finalization group is posted
		// after it, so the fact's proof answers first.
		{"BL007.no-finalization-group", "its finalization posting group",
			[]string{fact(holdGroup), postFinalization, fenceCommitted, workCommitted, reservationSettled}},
		// From here the group's own proof (BL006) passes: the fact names it.
		{"BL007.no-success-decision", "its success decision for the fence with the same amounts",
			[]string{postFinalization, fact(group), fenceCommitted, workCommitted, reservationSettled}},
		{"BL007.no-event", "its billing.finalization.committed@1 event",
			with(decision, postFinalization, fact(group), fenceCommitted, workCommitted, reservationSettled)},
	} {
		t.Run(c.clause, func(t *testing.T) {
			requireClause(t, refusedAs(t, b, roleBilling, c.stmts...), billing.CodeCommittedUnproven, "does not commit with "+c.missing)
		})
	}
}

// Every billing table refuses TRUNCATE, for every role (00041 re-creates
// 00040's triggers one by one so each carries its clause): the table owner
// (the role has no TRUNCATE grant, 42501). CASCADE, so the foreign keys do
// not answer first; the named table's trigger fires first.
func TestGuardClausesNoTruncate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for table, clause := range map[string]string{
		"billing_finalization_fences":             "BL001.fences-no-truncate",
		"billing_finalization_trigger_snapshots":  "BL001.trigger-snapshots-no-truncate",
		"billing_finalization_works":              "BL001.works-no-truncate",
		"closure_watermarks":                      "BL001.closure-watermarks-no-truncate",
		"settlement_input_watermarks":             "BL001.settlement-input-watermarks-no-truncate",
		"reservation_states":                      "BL001.reservation-states-no-truncate",
		"ledger_posting_groups":                   "BL001.posting-groups-no-truncate",
		"ledger_postings":                         "BL001.postings-no-truncate",
		"finalization_evaluations":                "BL001.evaluations-no-truncate",
		"finalization_committed":                  "BL001.committed-no-truncate",
		"coordinator_receipts":                    "BL001.coordinator-receipts-no-truncate",
		"finalization_input_manifests":            "BL001.input-manifests-no-truncate",
		"finalization_owner_receipts":             "BL001.owner-receipts-no-truncate",
		"finalization_validation_bundles":         "BL001.validation-bundles-no-truncate",
		"finalization_decisions":                  "BL001.decisions-no-truncate",
		"finalization_reconciliation_requests":    "BL001.reconciliation-requests-no-truncate",
		"consumed_command_grants":                 "BL001.consumed-grants-no-truncate",
		"finalization_reconciliation_resolutions": "BL001.resolutions-no-truncate",
		"resolution_watermarks":                   "BL001.resolution-watermarks-no-truncate",
		"settlement_catch_up_receipts":            "BC001.receipts-no-truncate",
		"settlement_catch_up_works":               "BC001.works-no-truncate",
		"settlement_transitions":                  "BC001.transitions-no-truncate",
		"late_settlement_exposures":               "BC001.exposures-no-truncate",
		"settlement_catch_up_fences":              "BC001.fences-no-truncate",
		"settlement_catch_up_finishes":            "BC001.finishes-no-truncate",
		"settlement_catch_up_claims":              "BC001.claims-no-truncate",
		"settlement_catch_up_attempts":            "BC001.attempts-no-truncate",
		"settlement_catch_up_blocks":              "BC001.blocks-no-truncate",
		"late_settlement_cases":                   "BC001.late-cases-no-truncate",
		"funding_accounts":                        "BC001.funding-accounts-no-truncate",
		"funding_decisions":                       "BC001.funding-decisions-no-truncate",
		"late_consumed_grants":                    "BC001.late-grants-no-truncate",
		"late_consumed_funding_jtis":              "BC001.late-funding-jtis-no-truncate",
		"late_settlement_command_results":         "BC001.late-results-no-truncate",
		"late_settlement_exposure_resolutions":    "BC001.exposure-resolutions-no-truncate",
	} {
		code := billing.CodeInsertOnly
		if clause[:2] == "BC" {
			code = catchup.CodeInsertOnly
		}
		pg := refusedAs(t, b, roleOwner, "TRUNCATE billing."+table+" CASCADE")
		require.Equal(t, code, pg.Code, "%s: %s", clause, pg.Message)
		require.Contains(t, pg.Message, "TRUNCATE on billing."+table+" is forbidden", clause)
	}
}
