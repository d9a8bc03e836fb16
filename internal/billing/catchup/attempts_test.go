package catchup_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/billing/catchup"
)

// Catch-up Work attempts (issue 16 slice: Started with fencing token and
// lease, the token bound in the database, blocked_on_owner_conflict with
// Blocked@1). Each worker here is a separate session set on the billing
// role's pool; clocks are explicit so lease expiry and backoff need no sleeps.

func (b *catchUpBundle) workerAt(t *testing.T, m catchup.Metering, clock *atomic.Int64) *catchup.Worker {
	t.Helper()
	w, err := catchup.NewWorker(b.pool, catchup.WorkerConfig{Metering: m, Ledger: b.ledger, Lease: time.Minute,
		BlockedBackoff: time.Second, Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	require.NoError(t, err)
	return w
}

func clockAt(at time.Time) *atomic.Int64 {
	var c atomic.Int64
	c.Store(at.UnixNano())
	return &c
}

type catchUpAttemptRow struct {
	Generation, Number int64
	Token              string
}

func (b *catchUpBundle) attempts(t *testing.T, d billingc.SettlementDimension) []catchUpAttemptRow {
	t.Helper()
	rows, err := b.admin.Query(t.Context(), `SELECT work_generation, attempt_number, fencing_token::text
		FROM billing.settlement_catch_up_attempts WHERE settlement_dimension_id = $1 ORDER BY work_generation, attempt_number`, d.SettlementDimensionID())
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (catchUpAttemptRow, error) {
		var a catchUpAttemptRow
		return a, r.Scan(&a.Generation, &a.Number, &a.Token)
	})
	require.NoError(t, err)
	return out
}

func (b *catchUpBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// unavailableMetering answers every request with a transient failure.
type unavailableMetering struct{}

var errMeteringDown = errors.New("metering unavailable")

func (unavailableMetering) ValidateSettlementInputCurrent(context.Context, catchup.ValidationRequest) (catchup.Validation, error) {
	return catchup.Validation{}, errMeteringDown
}

func (unavailableMetering) SettlementInputTarget(context.Context, string, billingc.SettlementInput) (string, error) {
	return "", errMeteringDown
}

// Two workers on one Work: while the first holds its attempt's lease (it is
// inside Metering's validation), the second worker's claim finds nothing
// (SKIP LOCKED / live lease): exactly one attempt, one transition, one finish.
func TestCatchUpAttemptTwoWorkersOneWins(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "70")
	b.finalize(t, "100", d)
	clock := clockAt(catchUpAt.Add(time.Hour))
	first, second := b.workerAt(t, b.metering, clock), b.workerAt(t, b.metering, clock)

	inValidation, secondDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.metering.beforeValidate = func(catchup.ValidationRequest) {
		once.Do(func() { close(inValidation); <-secondDone })
	}
	var wg sync.WaitGroup
	var firstStep, secondStep string
	var firstErr, secondErr error
	wg.Go(func() { firstStep, firstErr = first.Step(t.Context(), d.SettlementDimensionID()) })
	wg.Go(func() {
		defer close(secondDone)
		<-inValidation
		secondStep, secondErr = second.Step(t.Context(), d.SettlementDimensionID())
	})
	wg.Wait()
	require.NoError(t, firstErr)
	require.NoError(t, secondErr)
	require.Equal(t, catchup.StepTransition, firstStep)
	require.Equal(t, catchup.StepSuperseded, secondStep)
	require.Equal(t, []catchUpAttemptRow{{Generation: 1, Number: 1, Token: b.attempts(t, d)[0].Token}}, b.attempts(t, d))
	require.Equal(t, []string{"1>2 refund 30 v2"}, b.transitions(t, d))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM billing.settlement_catch_up_finishes WHERE settlement_dimension_id = $1`, d.SettlementDimensionID()))
}

// A lease expires mid-transition: another worker reclaims the Work with a
// new fencing token (attempt 2) while the first is still working; the first
// worker's commit (same fence revision, so the application's compare-and-set
// passes) is refused by PostgreSQL (BC006: the worker reports fenced_out,
// which only that SQLSTATE produces) and writes nothing. The database
// also refuses the old token written directly as the billing role.
func TestCatchUpAttemptExpiredLeaseOldTokenRefusedByPostgres(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "70")
	b.finalize(t, "100", d)
	start := catchUpAt.Add(time.Hour)
	old := b.workerAt(t, b.metering, clockAt(start))
	// The reclaimer comes after the lease (1 minute) and finds Metering down:
	// it holds the newest token but writes nothing.
	reclaimer := b.workerAt(t, unavailableMetering{}, clockAt(start.Add(2*time.Minute)))
	var once sync.Once
	var reclaimStep string
	var reclaimErr error
	b.metering.beforeValidate = func(catchup.ValidationRequest) {
		once.Do(func() { reclaimStep, reclaimErr = reclaimer.Step(t.Context(), d.SettlementDimensionID()) })
	}
	before := b.fence(t, d)
	step, err := old.Step(t.Context(), d.SettlementDimensionID())
	require.ErrorIs(t, reclaimErr, errMeteringDown)
	require.Empty(t, reclaimStep)
	require.NoError(t, err)
	require.Equal(t, catchup.StepFencedOut, step, "the old token's commit is refused by PostgreSQL (BC006)")
	require.Equal(t, before, b.fence(t, d))
	require.Empty(t, b.transitions(t, d))
	require.Zero(t, b.count(t, `SELECT count(*) FROM billing.settlement_catch_up_finishes`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM outbox.outbox_events WHERE event_type = 'billing.settlement-transition.committed@1'`))
	attempts := b.attempts(t, d)
	require.Len(t, attempts, 2)
	require.NotEqual(t, attempts[0].Token, attempts[1].Token)

	// The billing role writing with the old token directly: refused
	// (clause BC006.token-not-latest; the token-less write is
	// BC006.tokenless-not-reopen).
	for _, sql := range []string{
		`UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1, coordination_state = 'blocked_on_owner_conflict', attempt_fencing_token = $1`,
		`UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1, coordination_state = 'blocked_on_owner_conflict', attempt_fencing_token = NULL WHERE $1::text IS NOT NULL`,
	} {
		err := pgx.BeginFunc(t.Context(), b.admin, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_billing"); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), sql, attempts[0].Token)
			return err
		})
		require.Equal(t, catchup.CodeFenced, pgCode(err), "%s: %v", sql, err)
	}

	// A later worker reclaims again and finishes the Work.
	b.metering.beforeValidate = nil
	later := b.workerAt(t, b.metering, clockAt(start.Add(10*time.Minute)))
	step, err = later.Step(t.Context(), d.SettlementDimensionID())
	require.NoError(t, err)
	require.Equal(t, catchup.StepTransition, step)
	require.Equal(t, []string{"1>2 refund 30 v2"}, b.transitions(t, d))
	var finishToken string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT fencing_token::text FROM billing.settlement_catch_up_finishes
		WHERE settlement_dimension_id = $1 AND work_generation = 1`, d.SettlementDimensionID()).Scan(&finishToken))
	require.Equal(t, b.attempts(t, d)[2].Token, finishToken, "the finish names the latest attempt's token")
}

// An owner conflict from Metering's lineage read blocks the Work: Blocked@1
// (the existing contract, with the conflict fact quadruple Metering returned),
// fence blocked_on_owner_conflict with the same active Work, no finish, no
// transition; it is retried with a doubling backoff and succeeds once the
// owner answers again.
func TestCatchUpAttemptBlockedOnOwnerConflictThenFixed(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	v2 := b.metering.append(d, 2, "70")
	fact := cquad("sicf-owner-conflict")
	b.metering.mu.Lock()
	b.metering.conflicts[v2] = fact
	b.metering.mu.Unlock()
	b.finalize(t, "100", d)
	start := catchUpAt.Add(time.Hour)
	clock := clockAt(start)
	w := b.workerAt(t, b.metering, clock)

	steps, err := w.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]int{catchup.StepBlocked: 1}, steps)
	f := b.fence(t, d)
	require.Equal(t, billingc.CatchUpBlockedOnOwnerConflict, f.State)
	require.Equal(t, int64(1), f.Generation, "the same Work stays active")
	require.Empty(t, b.transitions(t, d))
	require.Zero(t, b.count(t, `SELECT count(*) FROM billing.settlement_catch_up_finishes`))

	var body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT blocked_body FROM billing.settlement_catch_up_blocks
		WHERE settlement_dimension_id = $1 AND work_generation = 1 AND attempt_number = 1`, d.SettlementDimensionID()).Scan(&body))
	blocked, err := receipt.DecodeBillingSettlementCatchUpWorkAttemptBlocked([]byte(body))
	require.NoError(t, err)
	require.NoError(t, blocked.VerifyDigest())
	require.Equal(t, receipt.CauseSettlementInputOwnerConflict, blocked.BlockingCause.Kind)
	require.Equal(t, fact, blocked.BlockingCause.Fact)
	require.Equal(t, b.attempts(t, d)[0].Token, blocked.FencingToken)
	require.Equal(t, int64(1), blocked.WorkGeneration)

	// Backoff: not claimable before 1s; after it, still conflicting: blocked
	// again (the fence stays blocked, not re-versioned), then 2s.
	steps, err = w.RunOnce(t.Context())
	require.NoError(t, err)
	require.Empty(t, steps)
	clock.Store(start.Add(time.Second).UnixNano())
	steps, err = w.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]int{catchup.StepBlocked: 1}, steps)
	require.Equal(t, f, b.fence(t, d))
	clock.Store(start.Add(2 * time.Second).UnixNano())
	steps, err = w.RunOnce(t.Context())
	require.NoError(t, err)
	require.Empty(t, steps, "the second block doubles the backoff")

	// The owner fixes its lineage: the retry applies the transition and the
	// fence leaves blocked_on_owner_conflict.
	b.metering.mu.Lock()
	delete(b.metering.conflicts, v2)
	b.metering.mu.Unlock()
	clock.Store(start.Add(3 * time.Second).UnixNano())
	steps, err = w.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]int{catchup.StepTransition: 1}, steps)
	require.Equal(t, []string{"1>2 refund 30 v2"}, b.transitions(t, d))
	steps, err = w.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]int{catchup.StepCaughtUp: 1}, steps)
	require.Equal(t, billingc.CatchUpCaughtUp, b.fence(t, d).State)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM billing.settlement_catch_up_blocks`))

	// Blocked facts are insert-only (clause BC001.blocks-insert-only).
	_, err = b.admin.Exec(t.Context(), `DELETE FROM billing.settlement_catch_up_blocks`)
	require.Equal(t, catchup.CodeInsertOnly, pgCode(err))
}
