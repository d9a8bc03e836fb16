package catchup_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
)

// claimRow is a catch-up claim row as text: generation/attempt/available_at.
type claimRow struct {
	Generation, Attempt int64
	AvailableAt         string
}

func (b *catchUpBundle) claim(t *testing.T, d billingc.SettlementDimension) claimRow {
	t.Helper()
	var c claimRow
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT work_generation, attempt_number,
		CASE WHEN available_at = 'infinity' THEN 'infinity' WHEN available_at = '-infinity' THEN '-infinity' ELSE 'finite' END
		FROM billing.settlement_catch_up_claims WHERE settlement_dimension_id = $1`, d.SettlementDimensionID()).
		Scan(&c.Generation, &c.Attempt, &c.AvailableAt))
	return c
}

// claimMoveRefused runs one UPDATE of d's claim row as oceanway_billing
// (b.pool, the role that holds UPDATE on its available_at, work_generation
// and attempt_number) and returns the PostgreSQL error that refused it.
func (b *catchUpBundle) claimMoveRefused(t *testing.T, d billingc.SettlementDimension, set string) *pgconn.PgError {
	t.Helper()
	err := db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE billing.settlement_catch_up_claims SET `+set+` WHERE settlement_dimension_id = $1`, d.SettlementDimensionID())
		return err
	})
	require.Error(t, err, "the claim move committed: SET %s", set)
	var pg *pgconn.PgError
	require.True(t, errors.As(err, &pg), "not a PostgreSQL error: %v", err)
	return pg
}

// TestGuardClausesBC012ClaimRowMovesOnlyAsItsWriters (BC012.park-not-caught-up,
// BC012.unpark-caught-up, BC012.generation-not-active,
// BC012.attempt-not-latest; docs/billing-catch-up.md 00042). As
// oceanway_billing, each UPDATE of the claim row that would lose the Work
// (never claimed or finished again) is refused with BC012, the row
// unchanged, while the real worker's claims, the caught-up park, the
// successor's reset and the consumer's reopen commit through the guard:
//   - fence pending_verification: parking its claim at 'infinity'
//     (BC012.park-not-caught-up; before 00042 it committed and the claim
//     index no longer held the Work), moving it to the next generation
//     (BC012.generation-not-active), moving its attempt number up without an
//     attempt (BC012.attempt-not-latest);
//   - the worker drains it (claims, refund, successor generation, caught up
//     and parked): every legitimate move passes;
//   - fence caught_up: making its claim claimable again
//     (BC012.unpark-caught-up; every claim of it would fail BC007), moving
//     its attempt number back (BC012.attempt-not-latest);
//   - the consumer's reopen un-parks it to the next generation and the
//     worker catches up again.
func TestGuardClausesBC012ClaimRowMovesOnlyAsItsWriters(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(37)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "90")
	b.finalize(t, "100", d)
	b.ack(t, inputEvent(d, 2))
	require.Equal(t, "pending_verification", b.fence(t, d).State)
	open := b.claim(t, d)
	require.Equal(t, claimRow{Generation: b.fence(t, d).Generation, Attempt: 0, AvailableAt: "-infinity"}, open)

	// BC012.park-not-caught-up
	requireClause(t, b.claimMoveRefused(t, d, "available_at = 'infinity'"), catchup.CodeClaimMoved, "parked at infinity while its fence is pending_verification")
	// BC012.generation-not-active
	requireClause(t, b.claimMoveRefused(t, d, "work_generation = work_generation + 1"), catchup.CodeClaimMoved, "its fence's active generation is")
	// BC012.attempt-not-latest (up, no attempt)
	requireClause(t, b.claimMoveRefused(t, d, "attempt_number = attempt_number + 1"), catchup.CodeClaimMoved, "whose latest attempt is 0")
	require.Equal(t, open, b.claim(t, d), "the claim row is unchanged")

	// The worker's claims, the successor's reset and the park pass.
	steps := b.drain(t)
	require.Equal(t, 1, steps[catchup.StepTransition], "%v", steps)
	require.Equal(t, []string{"1>2 refund 10 v2"}, b.transitions(t, d))
	f := b.fence(t, d)
	require.Equal(t, billingc.CatchUpCaughtUp, f.State)
	parked := b.claim(t, d)
	require.Equal(t, "infinity", parked.AvailableAt)
	require.Equal(t, f.Generation, parked.Generation)
	require.EqualValues(t, 1, parked.Attempt, "the successor generation's one claim")

	// BC012.unpark-caught-up
	requireClause(t, b.claimMoveRefused(t, d, "available_at = '-infinity'"), catchup.CodeClaimMoved, "while its fence is caught up")
	// BC012.attempt-not-latest (back)
	requireClause(t, b.claimMoveRefused(t, d, "attempt_number = 0"), catchup.CodeClaimMoved, "whose latest attempt is 1")
	require.Equal(t, parked, b.claim(t, d), "the claim row is unchanged")

	// The consumer's reopen un-parks it to the next generation.
	b.metering.append(d, 3, "80")
	b.ack(t, inputEvent(d, 3))
	require.Equal(t, claimRow{Generation: f.Generation + 1, Attempt: 0, AvailableAt: "-infinity"}, b.claim(t, d))
	b.drain(t)
	require.Equal(t, []string{"1>2 refund 10 v2", "2>3 refund 10 v3"}, b.transitions(t, d))
	require.Equal(t, billingc.CatchUpCaughtUp, b.fence(t, d).State)
	require.Equal(t, "infinity", b.claim(t, d).AvailableAt)
}
