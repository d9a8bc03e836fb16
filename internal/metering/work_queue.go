package metering

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/work"
)

// Metering Work runs on the shared fenced Work primitive (internal/work):
// the queue rows are metering.pending_works (lease_until is the lease, new
// Work '-infinity'), each claim starts one immutable metering.work_attempts
// row with a fresh fencing token, and the Work's one finish and every fact
// name that token (ME003 refuses any other). This file is the queue's
// adapter; the lanes, generations and supersede rules stay in this package.

// pendingWork is where claimable Work is (index pending_works_claim, or
// pending_works_lane_claim with the lane). The release and renewal hold
// only while the caller's token is the Work's latest.
func pendingWork(where, order string) work.Claimable {
	return work.Claimable{
		Table: "metering.pending_works", Key: []string{"work_ref"},
		Where: where, Order: order, Lease: "lease_until", Now: "now()",
		Owner: `(SELECT a.fencing_token FROM metering.work_attempts a WHERE a.work_ref = q.work_ref
       ORDER BY a.attempt_number DESC LIMIT 1) = @fencing_token::uuid`,
		Age: "q.queued_at",
	}
}

// startAttempts is the claim's tail: one attempt per claimed Work, its
// number the next after the Work's last, its lease the queue row's.
const startAttempts = `, started AS (
  INSERT INTO metering.work_attempts (work_ref, attempt_number, fencing_token, lease_until)
  SELECT c.work_ref,
         coalesce((SELECT max(a.attempt_number) FROM metering.work_attempts a WHERE a.work_ref = c.work_ref), 0) + 1,
         gen_random_uuid(), c.lease_until
  FROM claimed c
  RETURNING work_ref, attempt_number, fencing_token
)
SELECT w.work_ref, w.work_digest, w.execution_attempt_id::text AS execution_attempt_id, w.lane_kind,
       w.gateway_deployment_id, w.source_evidence_dimension_key, w.work_generation,
       w.operation_id::text AS operation_id, w.trigger_digest, s.attempt_number, s.fencing_token::text AS fencing_token
FROM started s JOIN metering.input_works w ON w.work_ref = s.work_ref`

func anyLaneStore(pool db.Beginner) *work.Store {
	return work.NewStore(pool, pendingWork("q.lease_until <= now()", "q.lease_until, q.queued_at, q.work_ref"), startAttempts, nil)
}

func laneStore(pool db.Beginner) *work.Store {
	return work.NewStore(pool, pendingWork("q.lane_kind = @lane_kind AND q.lease_until <= now()",
		"q.lane_kind, q.lease_until, q.queued_at, q.work_ref"), startAttempts, nil)
}

// laneQueueName is the Work metrics' queue label of a lane.
var laneQueueName = map[string]string{
	receipt.LaneEligibility:  "metering_eligibility",
	receipt.LaneProviderCost: "metering_provider_cost",
}

func claimOne(ctx context.Context, s *work.Store, lease time.Duration, args pgx.NamedArgs) (*Attempt, error) {
	rows, err := work.Claim[startedRow](ctx, s, 1, lease, args)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNoWork
	}
	return &Attempt{Head: rows[0].head(rows[0].AttemptNumber, rows[0].FencingToken)}, nil
}

// Claim locks one unfinished Work without a live lease (FOR UPDATE SKIP
// LOCKED: concurrent workers never claim the same Work) and starts its next
// attempt with a fresh fencing token. ErrNoWork when none is claimable.
func Claim(ctx context.Context, pool db.Beginner, lease time.Duration) (*Attempt, error) {
	return claimOne(ctx, anyLaneStore(pool), lease, nil)
}

// ClaimLane is Claim restricted to one lane (index-backed: the queue keeps
// each Work's lane), so a worker never walks Work it does not process.
func ClaimLane(ctx context.Context, pool db.Beginner, lane string, lease time.Duration) (*Attempt, error) {
	return claimOne(ctx, laneStore(pool), lease, pgx.NamedArgs{"lane_kind": lane})
}

func attemptArgs(a *Attempt) pgx.NamedArgs {
	return pgx.NamedArgs{"work_ref": a.Head.Work.Ref, "fencing_token": a.Head.FencingToken}
}

// Release hands a Work back after a retryable failure (its lease ends after
// backoff) when a is still its latest attempt; it writes no fact and no finish.
func Release(ctx context.Context, pool db.Beginner, a *Attempt, backoff time.Duration) error {
	return laneStore(pool).Release(ctx, attemptArgs(a), backoff)
}

// laneQueue is one lane's Work as a work.Queue.
type laneQueue struct {
	w     *Worker
	lane  string
	store *work.Store
}

var _ work.Renewer[*Attempt] = (*laneQueue)(nil)

func (q *laneQueue) Claim(ctx context.Context, limit int, lease time.Duration) ([]*Attempt, error) {
	rows, err := work.Claim[startedRow](ctx, q.store, limit, lease, pgx.NamedArgs{"lane_kind": q.lane})
	if err != nil {
		return nil, err
	}
	out := make([]*Attempt, len(rows))
	for i, r := range rows {
		out[i] = &Attempt{Head: r.head(r.AttemptNumber, r.FencingToken)}
	}
	return out, nil
}

func (q *laneQueue) Release(ctx context.Context, a *Attempt, after time.Duration) error {
	return q.store.Release(ctx, attemptArgs(a), after)
}

func (q *laneQueue) Renew(ctx context.Context, a *Attempt, lease time.Duration) error {
	return q.store.Renew(ctx, attemptArgs(a), lease)
}

func (q *laneQueue) Backlog(ctx context.Context) (work.Backlog, error) {
	return q.store.Backlog(ctx, pgx.NamedArgs{"lane_kind": q.lane})
}

func (q *laneQueue) Work(ctx context.Context, a *Attempt) work.Result {
	return q.w.process(ctx, a)
}

// process runs one attempt and says what the Runner does next.
func (w *Worker) process(ctx context.Context, a *Attempt) work.Result {
	retry := 10 * w.cfg.Idle
	out, err := w.proc.Process(ctx, a)
	switch {
	case errors.Is(err, ErrFenced):
		w.stats.fenced.Add(1) // a newer attempt owns the Work: nothing written
		return work.FencedOut()
	case errors.Is(err, ErrNotSuperseded), errors.Is(err, ErrAvailabilityNotCurrent):
		// Not a failure: a newer generation is on its way (its event
		// supersedes this Work); nothing was written.
		w.stats.retried.Add(1)
		return work.RetryAfter(w.cfg.Idle)
	case errors.Is(err, ErrRetryable):
		// An owner read or lock did not answer: nothing was written (no
		// fact, no finish, no CAS); the Work is handed back.
		w.stats.retried.Add(1)
		return work.Result{Kind: work.Retry, After: retry, Err: err}
	case errors.Is(err, ErrOwnerConflictUnbound):
		w.stats.ownerConflicts.Add(1)
		return work.Result{Kind: work.Retry, After: retry, Err: err}
	case err != nil:
		w.stats.failed.Add(1)
		return work.FailedAfter(err, retry)
	case out.Blocked != nil:
		w.stats.blocked.Add(1)
		// The Work stays active; retry it less often the longer it stays
		// blocked (its cause needs a fix elsewhere).
		return work.BlockedFor(blockedBackoff(a.Head.Lane.Kind, w.cfg.Idle).After(a.Head.AttemptNumber))
	}
	if out.Finished == nil && len(out.Awaiting) > 0 {
		// Registered dimensions await Gateway usage: the Work stays active
		// (their availability event supersedes it); retried like a block,
		// less often the longer it waits.
		w.stats.awaiting.Add(1)
		return work.Result{Kind: work.Retry, After: blockedBackoff(a.Head.Lane.Kind, w.cfg.Idle).After(a.Head.AttemptNumber)}
	}
	w.stats.snapshots.Add(int64(out.NewSnapshots))
	if out.Finished != nil && out.Finished.Outcome.State == receipt.FinishSuperseded {
		w.stats.superseded.Add(1)
		return work.Done(workOutcomeSuperseded)
	}
	if out.Finished != nil {
		w.stats.applied.Add(1)
	}
	return work.Done(workOutcomeApplied)
}

// blockedBackoff is how long a blocked Work waits, doubled per attempt of
// the Work, at most 10 minutes: from 10 idle periods on the eligibility
// lane, from costBlockedRetry on the provider-cost lane (its fix is an
// operator's; the release ProcessCostWork writes with the block is never
// shortened by the Runner's).
func blockedBackoff(lane string, idle time.Duration) work.Backoff {
	base := 10 * idle
	if lane == receipt.LaneProviderCost {
		base = costBlockedRetry
	}
	return work.Backoff{Base: base, Max: 10 * time.Minute}
}

// The lanes' finished outcomes (the finishes metric's fixed set).
const (
	workOutcomeApplied    = "applied"
	workOutcomeSuperseded = "superseded"
)
