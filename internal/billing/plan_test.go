package billing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/db"
)

// No hot statement reads more as history grows: every lookup the
// coordinator, the commit, the owner read and the ledger guards make is
// served by an index on the key it names (checked with sequential scans
// disabled, so the plan shows an index exists for the predicate).
func TestHotStatementsAreIndexBacked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	_, err := b.commit(t, b.decision(t, r, billingc.SuccessReleaseAll, "0", "2500"), billing.CommitOpts{})
	require.NoError(t, err)
	for name, stmt := range map[string]string{
		"fence by run":              "SELECT 1 FROM billing.billing_finalization_fences WHERE run_id = '" + r.runID + "' FOR UPDATE",
		"fence by id":               "SELECT 1 FROM billing.billing_finalization_fences WHERE billing_finalization_fence_id = '" + r.fenceID + "' FOR UPDATE",
		"work by generation":        "SELECT 1 FROM billing.billing_finalization_works WHERE billing_finalization_fence_id = '" + r.fenceID + "' AND work_generation = 2",
		"closure by fence":          "SELECT 1 FROM billing.closure_watermarks WHERE billing_finalization_fence_id = '" + r.fenceID + "'",
		"committed by reservation":  "SELECT 1 FROM billing.finalization_committed WHERE billing_reservation_id = '" + r.reservationID + "'",
		"committed by ref":          "SELECT 1 FROM billing.finalization_committed WHERE committed_ref = 'bfc-x'",
		"watermarks of reservation": "SELECT 1 FROM billing.settlement_input_watermarks WHERE billing_reservation_id = '" + r.reservationID + "'",
		"lines of a group":          "SELECT sum(amount) FROM billing.ledger_postings WHERE posting_group_id = '" + r.fenceID + "'",
		"balances of reservation":   "SELECT sum(balance) FROM billing.ledger_balances WHERE billing_reservation_id = '" + r.reservationID + "'",
		"finalization group":        "SELECT 1 FROM billing.ledger_posting_groups WHERE billing_reservation_id = '" + r.reservationID + "' AND group_kind = 'finalization'",
		"evaluation of generation":  "SELECT 1 FROM billing.finalization_evaluations WHERE billing_finalization_fence_id = '" + r.fenceID + "' AND work_generation = 2",
	} {
		err := db.WithTx(t.Context(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN (FORMAT TEXT) "+stmt)
			if err != nil {
				return err
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			text := strings.Join(plan, "\n")
			require.Contains(t, text, "Index", "%s:\n%s", name, text)
			require.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
			return nil
		})
		require.NoError(t, err, name)
	}
}
