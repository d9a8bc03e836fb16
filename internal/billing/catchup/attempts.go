package catchup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

// Catch-up Work attempts (migration 00024): every step of a Work generation
// runs as one attempt with a fencing token and a lease (the Started log).
// Every write of the step (finish, fence change, block) names the token, and
// the database refuses it unless it is the latest attempt of the generation
// (BC006): a worker whose lease expired and was reclaimed writes nothing.

// ErrSettlementInputOwnerConflict: the Metering owner answered a
// deterministic conflict for the settlement input (validateSettlementInputCurrent
// or the lineage read). Only a *SettlementInputOwnerConflictError carrying
// the owner's SettlementInputConflictFact@1 quadruple blocks the Work;
// Billing never forges that fact.
var ErrSettlementInputOwnerConflict = errors.New("billing: settlement input owner conflict")

// SettlementInputOwnerConflictError is how Metering (the interface) reports an
// owner conflict: Fact is the SettlementInputConflictFact@1 quadruple the
// owner recorded. The worker records BillingSettlementCatchUpWorkAttemptBlocked@1
// with it, sets the fence blocked_on_owner_conflict, keeps the Work pending
// and retries it with backoff until the owner answers again.
type SettlementInputOwnerConflictError struct {
	Fact   strict.Quadruple
	Detail string
}

func (e *SettlementInputOwnerConflictError) Error() string {
	return fmt.Sprintf("%s: %s (fact %s)", ErrSettlementInputOwnerConflict, e.Detail, e.Fact.Ref)
}

func (e *SettlementInputOwnerConflictError) Unwrap() error { return ErrSettlementInputOwnerConflict }

// StepBlocked: the owner answered a conflict; the attempt recorded
// Blocked@1 and the fence is blocked_on_owner_conflict until a retry succeeds.
const StepBlocked = "blocked_on_owner_conflict"

// StepFencedOut: the attempt's lease ended and a newer attempt
// reclaimed the Work; PostgreSQL refused this attempt's writes (BC006) and
// nothing of it was committed.
const StepFencedOut = "fenced_out"

// Defaults of the attempt lease and the blocked backoff.
const (
	defaultCatchUpLease          = 30 * time.Second
	defaultCatchUpBlockedBackoff = time.Second
	maxCatchUpBlockedBackoff     = 5 * time.Minute
)

// catchUpAttempt is one claimed attempt of a Work generation (the Started record).
type catchUpAttempt struct {
	DimensionID    string    `db:"settlement_dimension_id"`
	WorkGeneration int64     `db:"work_generation"`
	AttemptNumber  int64     `db:"attempt_number"`
	FencingToken   string    `db:"fencing_token"`
	LeaseExpiresAt time.Time `db:"lease_expires_at"`
}

// block records the owner conflict of the claimed attempt:
// BillingSettlementCatchUpWorkAttemptBlocked@1 with the owner's conflict
// fact, the fence blocked_on_owner_conflict (same active Work, still to be
// verified; no finish, no terminal state, no case); the claim backs off by
// the returned delay, doubling per block of the generation.
func (w *Worker) block(ctx context.Context, claim *catchUpClaim, conflict *SettlementInputOwnerConflictError) (string, time.Duration, error) {
	if err := conflict.Fact.Validate(); err != nil {
		return "", 0, fmt.Errorf("catch-up step %s: owner conflict without a whole conflict fact: %w", claim.fence.SettlementDimensionID, err)
	}
	now := w.cfg.Now()
	var backoff time.Duration
	step, err := db.WithTxV(ctx, w.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
		f, moved, err := w.relock(ctx, tx, claim)
		if err != nil || moved {
			return StepSuperseded, err
		}
		work, a := claim.work, claim.attempt
		d := work.Dimension
		b := &receipt.BillingSettlementCatchUpWorkAttemptBlocked{
			Blocked: strict.Quadruple{Ref: "bscwb-" + uuid.Must(uuid.NewV7()).String()}, Work: work.Work,
			BillingCatchUpValidationOperationID: work.ValidationOperationID(), BillingReservationID: d.BillingReservationID,
			BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID, ExecutionAttemptID: d.ExecutionAttemptID,
			ChargeDimensionKey: d.ChargeDimensionKey, WorkGeneration: a.WorkGeneration, AttemptNumber: a.AttemptNumber,
			FencingToken: a.FencingToken, BlockedAt: now,
			BlockingCause: receipt.BlockingCause{Kind: receipt.CauseSettlementInputOwnerConflict, Fact: conflict.Fact},
		}
		if err := b.Seal(); err != nil {
			return "", fmt.Errorf("seal catch-up blocked: %w", err)
		}
		body, err := jcs.Marshal(b.ToJSON())
		if err != nil {
			return "", fmt.Errorf("catch-up blocked body: %w", err)
		}
		q, cf := b.Blocked, conflict.Fact
		if _, err := tx.Exec(ctx, qCatchUpBlockInsert, pgx.NamedArgs{
			"settlement_dimension_id": f.SettlementDimensionID, "work_generation": a.WorkGeneration, "attempt_number": a.AttemptNumber,
			"fencing_token": a.FencingToken, "blocked_ref": q.Ref, "blocked_schema_version": q.SchemaVersion,
			"blocked_digest_algorithm_version": string(q.DigestAlgorithmVersion), "blocked_digest": q.Digest,
			"conflict_fact_ref": cf.Ref, "conflict_fact_schema_version": cf.SchemaVersion,
			"conflict_fact_digest_algorithm_version": string(cf.DigestAlgorithmVersion), "conflict_fact_digest": cf.Digest,
			"blocked_body": string(body), "blocked_at": now,
		}); err != nil {
			return "", fmt.Errorf("insert catch-up blocked: %w", err)
		}
		if f.CoordinationState != billingc.CatchUpBlockedOnOwnerConflict {
			c := f.change()
			c.State, c.AttemptToken = billingc.CatchUpBlockedOnOwnerConflict, a.FencingToken
			if _, err := updateCatchUpFence(ctx, tx, f, c, now); err != nil {
				return "", err
			}
		}
		var blocks int64
		if err := tx.QueryRow(ctx, qCatchUpBlockCount, pgx.NamedArgs{"settlement_dimension_id": f.SettlementDimensionID,
			"work_generation": a.WorkGeneration}).Scan(&blocks); err != nil {
			return "", fmt.Errorf("count catch-up blocks: %w", err)
		}
		backoff = w.blockedBackoff().After(blocks)
		return StepBlocked, nil
	})
	return step, backoff, err
}
