package cases_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func id(parts ...any) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(parts...))).String()
}

type fixture struct {
	b          *dbtest.Bundle
	ops        *pgxpool.Pool // oceanway_operations
	identities cases.Identities
}

func setup(t *testing.T) fixture {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), operationsschema.Line()}, MaxConns: 12})
	pool := dbtest.RolePool(t, b.DSNs[boundary.Core], operationsschema.RoleOperations)
	return fixture{b: b, ops: pool, identities: cases.Identities{Pool: pool}}
}

func scope(n int, generation int64, predecessor *operationsread.CaseIdentity) operationsread.CaseScope {
	return operationsread.CaseScope{
		Tenant:           operationsread.Tenant{Kind: "organization", ID: id("tenant"), WorkspaceID: id("workspace")},
		BillingAccountID: id("account", n), ReservationID: id("reservation", n), RunID: id("run", n), FenceID: id("fence", n),
		Generation: generation, Predecessor: predecessor,
	}
}

// OP-1 (issue 31): the case identity is content-addressed and allocated
// once per fence generation. A lost response re-reserves and gets the same
// identity; so does the Work generation that took the fence over from the
// one that reserved (the identity names no Work). Sixteen concurrent
// sessions reserving one generation all get the one identity, one row.
func TestOP1CaseIdentityIsReservedOncePerGeneration(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), scope(1, 1, nil))
	require.NoError(t, err)
	require.Equal(t, reconciliation.ReconciliationCaseRef(id("fence", 1), 1), first.CaseRef)
	require.Equal(t, reconciliation.CaseRequestOperationID(id("fence", 1), 1), first.CaseRequestOperationID)
	require.NoError(t, first.Identity.Validate())

	later := cases.Identities{Pool: f.identities.Pool, Now: func() time.Time { return time.Now().Add(time.Hour) }}
	again, err := later.ReserveFinalizationCaseIdentity(t.Context(), scope(1, 1, nil))
	require.NoError(t, err)
	require.Equal(t, first, again, "a lost response (or the winning Work) re-reads the same identity")

	var wg sync.WaitGroup
	got := make([]operationsread.CaseIdentity, 16)
	errs := make([]error, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.identities.ReserveFinalizationCaseIdentity(t.Context(), scope(2, 1, nil))
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, got[0], got[i])
	}
	var rows int
	require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT count(*) FROM operations.finalization_case_identities
		WHERE billing_finalization_fence_id = $1`, id("fence", 2)).Scan(&rows))
	require.Equal(t, 1, rows)

	// Generation 2 names generation 1 as its predecessor.
	second, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), scope(1, 2, &first))
	require.NoError(t, err)
	require.NotEqual(t, first.Identity, second.Identity)
	require.EqualValues(t, 2, second.Generation)
}

// OP-1 (issue 31): the primitive answers exactly one fence's exact
// generation. A generation that skips, a predecessor that is not this
// fence's generation N-1 (or whose identity differs from the reserved one),
// malformed ids, and a second reservation of a generation with other
// content are refused, and nothing is written.
func TestOP1CaseIdentityScopeIsExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), scope(1, 1, nil))
	require.NoError(t, err)
	other, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), scope(3, 1, nil))
	require.NoError(t, err)

	forged := first
	forged.Identity.Digest = other.Identity.Digest
	for name, s := range map[string]operationsread.CaseScope{
		"generation 0":                     scope(1, 0, nil),
		"generation 2 without predecessor": scope(1, 2, nil),
		"generation 1 with predecessor":    scope(1, 1, &first),
		"predecessor of another fence":     scope(1, 2, &other),
		"predecessor skipping":             scope(1, 3, &first),
		"predecessor with another digest":  scope(1, 2, &forged),
		"predecessor never reserved":       scope(4, 2, &operationsread.CaseIdentity{Identity: first.Identity, CaseRef: reconciliation.ReconciliationCaseRef(id("fence", 4), 1), Generation: 1, CaseRequestOperationID: reconciliation.CaseRequestOperationID(id("fence", 4), 1)}),
		"fence id not canonical":           func() operationsread.CaseScope { s := scope(5, 1, nil); s.FenceID = "FENCE"; return s }(),
		"tenant id missing":                func() operationsread.CaseScope { s := scope(5, 1, nil); s.Tenant.ID = ""; return s }(),
	} {
		_, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), s)
		require.ErrorIs(t, err, operationsread.ErrInvalidScope, name)
	}
	conflicting := scope(1, 1, nil)
	conflicting.RunID = id("run", 99)
	_, err = f.identities.ReserveFinalizationCaseIdentity(t.Context(), conflicting)
	require.ErrorIs(t, err, operationsread.ErrIdentityConflict)

	var rows int
	require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT count(*) FROM operations.finalization_case_identities`).Scan(&rows))
	require.Equal(t, 2, rows, "only the two valid reservations")
}

// OP-1 (issue 31; OP001.case-identities-insert-only): a reserved identity
// is a fact PostgreSQL keeps: the
// Operations role can neither update nor delete it (OP001), and the Billing
// role, which asks for it, cannot write the table at all.
func TestOP1CaseIdentityIsImmutable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), scope(1, 1, nil))
	require.NoError(t, err)
	ops := f.ops
	for _, stmt := range []string{
		"UPDATE operations.finalization_case_identities SET reconciliation_case_ref = 'fcase-forged'",
		"DELETE FROM operations.finalization_case_identities",
	} {
		_, err := ops.Exec(t.Context(), stmt)
		var pg *pgconn.PgError
		require.True(t, errors.As(err, &pg), "%s: %v", stmt, err)
		require.Contains(t, []string{cases.CodeInsertOnly, pgerrcode.InsufficientPrivilege}, pg.Code, stmt)
	}
	_, err = f.b.Core().Exec(t.Context(), "UPDATE operations.finalization_case_identities SET reconciliation_case_ref = 'fcase-forged'")
	var pg *pgconn.PgError
	require.True(t, errors.As(err, &pg))
	require.Equal(t, cases.CodeInsertOnly, pg.Code, "the trigger refuses even the owner")
}
