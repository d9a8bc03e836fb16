package cases_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

func lateScope(n int, generation int64, predecessor *operationsread.CaseIdentity) operationsread.LateCaseScope {
	return operationsread.LateCaseScope{
		Tenant: operationsread.Tenant{Kind: "organization", ID: id("tenant"), WorkspaceID: id("workspace")},
		Dimension: billingc.SettlementDimension{BillingReservationID: id("reservation", n), BillingAccountID: id("account", n),
			RunID: id("run", n), RunStepID: id("step", n), ExecutionAttemptID: id("attempt", n), ChargeDimensionKey: "output_tokens",
			EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}},
		Generation: generation, Predecessor: predecessor,
	}
}

// BI-2 (issue 32): a late settlement case identity is allocated once per
// (settlement dimension, case generation): a lost response re-reads the
// same identity, sixteen concurrent sessions get the one row, and
// generation 2 names generation 1 of the same dimension.
func TestBI2LateCaseIdentityIsReservedOncePerGeneration(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(1, 1, nil))
	require.NoError(t, err)
	dim := lateScope(1, 1, nil).Dimension.SettlementDimensionID()
	require.Equal(t, reconciliation.LateSettlementCaseRef(dim, 1), first.CaseRef)
	require.Equal(t, reconciliation.LateSettlementCaseRequestOperationID(dim, 1), first.CaseRequestOperationID)
	require.NoError(t, first.Identity.Validate())

	later := cases.Identities{Pool: f.identities.Pool, Now: func() time.Time { return time.Now().Add(time.Hour) }}
	again, err := later.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(1, 1, nil))
	require.NoError(t, err)
	require.Equal(t, first, again, "a lost response re-reads the same identity")

	var wg sync.WaitGroup
	got := make([]operationsread.CaseIdentity, 16)
	errs := make([]error, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.identities.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(2, 1, nil))
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, got[0], got[i])
	}
	var rows int
	require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT count(*) FROM operations.late_settlement_case_identities
		WHERE settlement_dimension_id = $1`, lateScope(2, 1, nil).Dimension.SettlementDimensionID()).Scan(&rows))
	require.Equal(t, 1, rows)

	second, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(1, 2, &first))
	require.NoError(t, err)
	require.NotEqual(t, first.Identity, second.Identity)
	require.EqualValues(t, 2, second.Generation)
	stored := func(generation int64) *reconciliation.LateCaseIdentityReservation {
		var body string
		require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT identity_body FROM operations.late_settlement_case_identities
			WHERE settlement_dimension_id = $1 AND case_generation = $2`, dim, generation).Scan(&body))
		r, err := reconciliation.DecodeLateCaseIdentityReservation([]byte(body))
		require.NoError(t, err)
		return r
	}
	require.Equal(t, first.Identity, stored(2).Predecessor.Identity, "generation 2 binds generation 1's identity")
}

// BI-2 (issue 32): the primitive answers exactly one dimension's exact
// generation: a skipped generation, a predecessor of another dimension or
// with another digest, malformed ids and a second reservation with other
// content are refused, and nothing is written.
func TestBI2LateCaseIdentityScopeIsExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(1, 1, nil))
	require.NoError(t, err)
	other, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(3, 1, nil))
	require.NoError(t, err)
	forged := first
	forged.Identity.Digest = other.Identity.Digest
	for name, s := range map[string]operationsread.LateCaseScope{
		"generation 0":                     lateScope(1, 0, nil),
		"generation 2 without predecessor": lateScope(1, 2, nil),
		"generation 1 with predecessor":    lateScope(1, 1, &first),
		"predecessor of another dimension": lateScope(1, 2, &other),
		"predecessor skipping":             lateScope(1, 3, &first),
		"predecessor with another digest":  lateScope(1, 2, &forged),
		"attempt id not canonical": func() operationsread.LateCaseScope {
			s := lateScope(5, 1, nil)
			s.Dimension.ExecutionAttemptID = "ATTEMPT"
			return s
		}(),
	} {
		_, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), s)
		require.ErrorIs(t, err, operationsread.ErrInvalidScope, name)
	}
	conflicting := lateScope(1, 1, nil)
	conflicting.Dimension.BillingAccountID = id("account", 99)
	_, err = f.identities.ReserveLateSettlementCaseIdentity(t.Context(), conflicting)
	require.ErrorIs(t, err, operationsread.ErrIdentityConflict)
	var rows int
	require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT count(*) FROM operations.late_settlement_case_identities`).Scan(&rows))
	require.Equal(t, 2, rows, "only the two valid reservations")
}

// BI-2 (issue 32; OP001.late-case-identities-insert-only): a reserved late
// settlement case identity is a fact PostgreSQL keeps: neither the
// Operations role nor the table owner can update or delete it.
func TestBI2LateCaseIdentityIsImmutable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), lateScope(1, 1, nil))
	require.NoError(t, err)
	for _, stmt := range []string{
		"UPDATE operations.late_settlement_case_identities SET reconciliation_case_ref = 'lcase-forged'",
		"DELETE FROM operations.late_settlement_case_identities",
	} {
		for _, pool := range []interface {
			Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		}{f.ops, f.b.Core()} {
			_, err := pool.Exec(t.Context(), stmt)
			var pg *pgconn.PgError
			require.True(t, errors.As(err, &pg), "%s: %v", stmt, err)
			require.Contains(t, []string{cases.CodeInsertOnly, pgerrcode.InsufficientPrivilege}, pg.Code, stmt)
		}
	}
}
