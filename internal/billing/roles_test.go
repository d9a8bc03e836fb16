package billing_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/db"
)

func sqlState(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// execAsBilling runs stmts in one transaction as oceanway_billing and
// returns the SQLSTATE of the first failure (including at COMMIT).
func execAsBilling(t *testing.T, b *bundle, stmts ...string) string {
	t.Helper()
	return execAs(t, b.pool, stmts...)
}

func execAs(t *testing.T, pool *pgxpool.Pool, stmts ...string) string {
	t.Helper()
	err := db.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	require.Error(t, err, "%v", stmts)
	return sqlState(err)
}

// The database is the second guard: every billing invariant is refused by
// PostgreSQL itself to the least-privileged billing role (oceanway_billing):
// immutability (BL001), the fence/Work/reservation/watermark graphs
// (BL002), reconciliation_required without its command chain (BL003),
// balanced posting groups in the reservation's identity (BL004), no
// negative balance (23514), settled + released = reserved for a finalized
// reservation (BL005), one committed fact per reservation (23505), and no
// grant where the role has no business (42501).
func TestBillingGuardsAsLeastPrivilegedRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, open := newRun(1), newRun(2)
	b.closed(t, r)
	_, err := b.commit(t, b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "100", "2400"), billing.CommitOpts{})
	require.NoError(t, err)
	b.closed(t, open)
	res, fence, group := "'"+r.reservationID+"'", "'"+r.fenceID+"'", "'"+id("group-x")+"'"
	openRes, openFence := "'"+open.reservationID+"'", "'"+open.fenceID+"'"
	ident := `'{"kind":"credits"}'`
	// line is a posting on the open run's own account (hold's are on r's).
	line := func(reservation, no, kind, dir, amount string) string {
		return `INSERT INTO billing.ledger_postings VALUES (` + group + `, ` + no + `, ` + reservation + `, '` + open.accountID + `', ` + ident +
			`, '` + kind + `', '` + dir + `', ` + amount + `, now())`
	}
	hold := func(reservation, line, kind, dir, amount string) string {
		return `INSERT INTO billing.ledger_postings VALUES (` + group + `, ` + line + `, ` + reservation + `, '` + r.accountID + `', ` + ident +
			`, '` + kind + `', '` + dir + `', ` + amount + `, now())`
	}

	for name, c := range map[string]struct {
		code  string
		stmts []string
	}{
		"BL002 reservation leaves settled":     {billing.CodeTransitionRefused, []string{"UPDATE billing.reservation_states SET state = 'reserved', settled_amount = NULL, released_amount = NULL, committed_ref = NULL, finalized_at = NULL WHERE billing_reservation_id = " + res}},
		"BL002 committed fence reopens":        {billing.CodeTransitionRefused, []string{"UPDATE billing.billing_finalization_fences SET finalization_fence_revision = finalization_fence_revision + 1, coordination_state = 'awaiting_finalization', waiting_reason = 'x', committed_ref = NULL WHERE billing_finalization_fence_id = " + fence}},
		"BL002 revision skips":                 {billing.CodeTransitionRefused, []string{"UPDATE billing.billing_finalization_fences SET finalization_fence_revision = finalization_fence_revision + 2, coordination_state = 'awaiting_finalization', active_work_generation = NULL, waiting_reason = 'x' WHERE billing_finalization_fence_id = " + openFence}},
		"BL002 committed work reopens":         {billing.CodeTransitionRefused, []string{"UPDATE billing.billing_finalization_works SET work_state = 'pending', finished_at = NULL WHERE work_state = 'committed'"}},
		"BL002 closure watermark undone":       {billing.CodeTransitionRefused, []string{"UPDATE billing.billing_finalization_fences SET finalization_fence_revision = finalization_fence_revision + 1, closure_watermark_state = 'none', coordination_state = 'awaiting_finalization', active_work_generation = NULL, waiting_reason = 'x' WHERE billing_finalization_fence_id = " + openFence}},
		"BL003 reconciliation_required":        {billing.CodeReconciliationGuard, []string{"UPDATE billing.billing_finalization_fences SET finalization_fence_revision = finalization_fence_revision + 1, coordination_state = 'reconciliation_required', active_work_generation = NULL WHERE billing_finalization_fence_id = " + openFence}},
		"BL005 settled without its ledger":     {billing.CodeLedgerMismatch, []string{"UPDATE billing.reservation_states SET state = 'settled', settled_amount = 100, released_amount = 2400, committed_ref = 'x', finalized_at = now() WHERE billing_reservation_id = " + openRes}},
		"23514 settled + released != reserved": {pgerrcode.CheckViolation, []string{"UPDATE billing.reservation_states SET state = 'settled', settled_amount = 100, released_amount = 100, committed_ref = 'x', finalized_at = now() WHERE billing_reservation_id = " + openRes}},
		"23505 second committed fact": {pgerrcode.UniqueViolation, []string{`INSERT INTO billing.finalization_committed SELECT 'bfc-other', committed_schema_version, committed_digest_algorithm_version,
			committed_digest, billing_reservation_id, billing_finalization_fence_id, work_generation, gen_random_uuid(), finalization_fence_revision,
			decision, reserved_amount, settled_amount, released_amount, posting_group_id, gen_random_uuid(), event_envelope_sha256, committed_body, committed_at
			FROM billing.finalization_committed`}},
		"55000 balances are derived (a view)": {pgerrcode.ObjectNotInPrerequisiteState, []string{"UPDATE billing.ledger_balances SET balance = 0"}},
		"42501 the ledger has no INSERT grant": {pgerrcode.InsufficientPrivilege, []string{
			`INSERT INTO billing.ledger_posting_groups VALUES (` + group + `, ` + openRes + `, 'finalization', ` + ident + `, now())`}},
		"42501 admission facts are read-only": {pgerrcode.InsufficientPrivilege, []string{"UPDATE admission.reservations SET reserved_credits = 1"}},
		"42501 fence identity columns":        {pgerrcode.InsufficientPrivilege, []string{"UPDATE billing.billing_finalization_fences SET run_id = gen_random_uuid()"}},
	} {
		require.Equal(t, c.code, execAsBilling(t, b, c.stmts...), name)
	}

	// The ledger's own guards hold against the table owner, who may INSERT
	// directly (the role may not: 42501 above).
	for name, c := range map[string]struct {
		code  string
		stmts []string
	}{
		"BL004 a group with no line": {billing.CodeLedgerUnbalanced, []string{
			`INSERT INTO billing.ledger_posting_groups VALUES (` + group + `, ` + openRes + `, 'finalization', ` + ident + `, now())`}},
		"BL004 unbalanced group": {billing.CodeLedgerUnbalanced, []string{
			`INSERT INTO billing.ledger_posting_groups VALUES (` + group + `, ` + openRes + `, 'finalization', ` + ident + `, now())`,
			hold(openRes, "1", "reservation_hold", "debit", "100"), hold(openRes, "2", "settled_revenue", "credit", "99")}},
		"BL004 line off identity": {billing.CodeLedgerUnbalanced, []string{
			`INSERT INTO billing.ledger_posting_groups VALUES (` + group + `, ` + openRes + `, 'finalization', ` + ident + `, now())`,
			hold(openRes, "1", "reservation_hold", "debit", "100"),
			`INSERT INTO billing.ledger_postings VALUES (` + group + `, 2, ` + openRes + `, '` + r.accountID + `', '{"kind":"money","currency":"EUR"}', 'settled_revenue', 'credit', 100, now())`}},
		"BL006 a finalization group without its committed fact": {billing.CodeLedgerUnjustified, []string{
			`INSERT INTO billing.ledger_posting_groups VALUES (` + group + `, ` + openRes + `, 'finalization', ` + ident + `, now())`,
			line(openRes, "1", "reservation_hold", "debit", "2501"), line(openRes, "2", "settled_revenue", "credit", "2501")}},
		"23514 float-free amounts are positive": {pgerrcode.CheckViolation, []string{
			`INSERT INTO billing.ledger_posting_groups VALUES (` + group + `, ` + openRes + `, 'finalization', ` + ident + `, now())`,
			hold(openRes, "1", "reservation_hold", "debit", "-1")}},
	} {
		require.Equal(t, c.code, execAs(t, b.admin, c.stmts...), name)
	}

	// Insert-only facts: the role has no UPDATE/DELETE grant (42501), and
	// even the owner (the migrating user) is refused by the trigger (BL001).
	for _, stmt := range []string{
		"UPDATE billing.ledger_postings SET amount = amount + 1",
		"DELETE FROM billing.ledger_postings",
		"DELETE FROM billing.ledger_posting_groups",
		"UPDATE billing.finalization_committed SET committed_body = '{}'",
		"DELETE FROM billing.billing_finalization_fences WHERE billing_finalization_fence_id = " + openFence,
		"DELETE FROM billing.billing_finalization_works",
		"DELETE FROM billing.reservation_states",
		"DELETE FROM billing.coordinator_receipts",
		"UPDATE billing.closure_watermarks SET attempt_count = 0",
	} {
		require.Equal(t, pgerrcode.InsufficientPrivilege, execAsBilling(t, b, stmt), stmt)
		require.Equal(t, billing.CodeInsertOnly, execAs(t, b.admin, stmt), stmt)
	}
	// Balances are a view over the postings: no row to edit, for anyone.
	for _, stmt := range []string{"DELETE FROM billing.ledger_balances", "UPDATE billing.ledger_balances SET balance = 0"} {
		require.Equal(t, pgerrcode.ObjectNotInPrerequisiteState, execAs(t, b.admin, stmt), stmt)
	}

	// Watermarks only move forward.
	_, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.SettlementAdvance, error) {
		return billing.ApplySettlementInputTx(ctx, tx, open.settlement(1, 3, ""))
	})
	require.NoError(t, err)
	require.Equal(t, billing.CodeTransitionRefused, execAsBilling(t, b,
		"UPDATE billing.settlement_input_watermarks SET settlement_input_state_version = 2, inbox_revision = inbox_revision + 1"))
}
