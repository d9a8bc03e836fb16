package catchup

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/work"
)

// Catch-up Work runs on the shared fenced Work primitive (internal/work):
// the queue rows are billing.settlement_catch_up_claims (available_at is
// the lease, '-infinity' for a new generation, 'infinity' once caught up),
// each claim starts one immutable settlement_catch_up_attempts row with a
// fresh fencing token, and every write of the step names that token (BC006
// refuses any other). This file is the queue's adapter; the fence, Work
// generations and transitions stay in this package.

// QueueName is the Work metrics' label of catch-up Work.
const QueueName = "billing_settlement_catch_up"

// claimableCatchUp is where claimable catch-up Work is: the partial index
// settlement_catch_up_claims_available holds only rows before 'infinity',
// so a claim never reads caught-up history. The clock is the worker's
// (cfg.Now), as for every fact the catch-up commits. A release or renewal
// holds only for the claim's own generation and attempt number, and never
// for a parked claim: its attempt caught the fence up and ended, so a
// renewal still running for it must not make it claimable again.
func claimableCatchUp(where string) work.Claimable {
	return work.Claimable{
		Table: "billing.settlement_catch_up_claims", Key: []string{"settlement_dimension_id"},
		Where: "q.available_at < 'infinity' AND q.available_at <= @now::timestamptz" + where,
		Order: "q.available_at, q.settlement_dimension_id", Lease: "available_at", Now: "@now::timestamptz",
		Set:   "attempt_number = q.attempt_number + 1",
		Owner: "q.work_generation = @work_generation AND q.attempt_number = @attempt_number AND q.available_at < 'infinity'",
		Join:  "JOIN billing.settlement_catch_up_fences f ON f.settlement_dimension_id = q.settlement_dimension_id",
		Age:   "f.updated_at",
	}
}

// startCatchUpAttempts is the claim's tail: the Started record of each
// claimed generation, its lease the claim row's.
const startCatchUpAttempts = `INSERT INTO billing.settlement_catch_up_attempts (settlement_dimension_id, work_generation, attempt_number,
  fencing_token, started_at, lease_expires_at)
SELECT settlement_dimension_id, work_generation, attempt_number, gen_random_uuid(), @now::timestamptz, available_at
FROM claimed
RETURNING settlement_dimension_id::text, work_generation, attempt_number, fencing_token::text, lease_expires_at`

func catchUpStores(pool db.Beginner, now func() time.Time) (anyDimension, oneDimension *work.Store) {
	return work.NewStore(pool, claimableCatchUp(""), startCatchUpAttempts, now),
		work.NewStore(pool, claimableCatchUp(" AND q.settlement_dimension_id = @settlement_dimension_id::uuid"), startCatchUpAttempts, now)
}

func (a catchUpAttempt) args() pgx.NamedArgs {
	return pgx.NamedArgs{"settlement_dimension_id": a.DimensionID, "work_generation": a.WorkGeneration, "attempt_number": a.AttemptNumber}
}

// blockedBackoff is the wait after the n-th block of a generation:
// doubling from the configured base, capped.
func (w *Worker) blockedBackoff() work.Backoff {
	return work.Backoff{Base: w.cfg.BlockedBackoff, Max: maxCatchUpBlockedBackoff}
}

// queue is catch-up Work as a work.Queue; dimension restricts the claim to
// one settlement dimension (Step).
type queue struct {
	w         *Worker
	store     *work.Store
	dimension string
}

var _ work.Renewer[catchUpAttempt] = (*queue)(nil)

func (q *queue) Claim(ctx context.Context, limit int, lease time.Duration) ([]catchUpAttempt, error) {
	var args pgx.NamedArgs
	if q.dimension != "" {
		args = pgx.NamedArgs{"settlement_dimension_id": q.dimension}
	}
	return work.Claim[catchUpAttempt](ctx, q.store, limit, lease, args)
}

func (q *queue) Release(ctx context.Context, a catchUpAttempt, after time.Duration) error {
	return q.store.Release(ctx, a.args(), after)
}

func (q *queue) Renew(ctx context.Context, a catchUpAttempt, lease time.Duration) error {
	return q.store.Renew(ctx, a.args(), lease)
}

func (q *queue) Backlog(ctx context.Context) (work.Backlog, error) { return q.store.Backlog(ctx, nil) }

// Work runs one claimed attempt. An owner conflict blocks the Work
// (Blocked@1, backoff); a step that wrote nothing is handed back at once
// (the slot waits Idle before it claims again); a token the database
// fenced out wrote nothing and releases nothing.
func (q *queue) Work(ctx context.Context, a catchUpAttempt) work.Result {
	w := q.w
	step, err := w.step(ctx, a)
	var backoff time.Duration
	var blocking *catchUpBlockingError
	if errors.As(err, &blocking) {
		step, backoff, err = w.block(ctx, blocking.claim, blocking.conflict)
	}
	var pgErr *pgconn.PgError
	var res work.Result
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == CodeFenced:
		// Our lease ended and another attempt holds the Work: the database
		// refused every write of this one; the claim is the other's.
		step, res = StepFencedOut, work.FencedOut()
	case err != nil:
		return work.FailedAfter(err, 0)
	case step == StepBlocked:
		res = work.BlockedFor(backoff)
	case step == StepCaughtUp || step == StepTransition || step == StepAlreadyEvaluated:
		res = work.Done(step)
	default:
		res = work.RetryAfter(0)
	}
	res.Outcome = step
	w.mu.Lock()
	w.steps[step]++
	w.mu.Unlock()
	return res
}
