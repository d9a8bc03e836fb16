package billing

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/dbsqlc"
)

// Evaluation outcomes that end a Work generation without economic effect.
const (
	// EvaluationBlocked: execution not closed, inputs not closed — a normal,
	// visible wait.
	EvaluationBlocked = "blocked"
	// EvaluationReconciliationDeferred: the decision is
	// reconciliation_required (conflicting input, target above the
	// reservation) and the worker runs without Operations' case identities
	// (finalization.BillingLedger.Cases nil): it is recorded, with its
	// reason, and the fence waits for a new input.
	EvaluationReconciliationDeferred = "reconciliation_deferred"
)

// Evaluation is a finalization evaluation of one Work generation.
type Evaluation struct {
	FenceID        string
	WorkGeneration int64
	OperationID    string
	// Outcome is EvaluationBlocked or EvaluationReconciliationDeferred.
	Outcome string
	// ReasonCode is a low-cardinality snake_case code (e.g.
	// closure_event_not_applied, settlement_input_pending,
	// target_above_reservation); ReasonDetail a short human-readable text.
	ReasonCode   string
	ReasonDetail string
	// DecisionObject optionally names the BillingFinalizationDecision
	// (blocked | reconciliation_required) the evaluation recorded.
	DecisionObject *strict.Quadruple
}

// EvaluationResult is the recorded evaluation.
type EvaluationResult struct {
	Evaluation
	// Replayed: this generation's evaluation was recorded before with the
	// same content; nothing was written.
	Replayed bool
}

var reasonCode = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func (e Evaluation) validate() error {
	switch {
	case e.Outcome != EvaluationBlocked && e.Outcome != EvaluationReconciliationDeferred:
		if e.Outcome == FenceReconciliationRequired {
			return fmt.Errorf("%w: reconciliation_required enters a case (RecordReconciliationTx)", ErrInvalidEvaluation)
		}
		return fmt.Errorf("%w: outcome %q", ErrInvalidEvaluation, e.Outcome)
	case !reasonCode.MatchString(e.ReasonCode):
		return fmt.Errorf("%w: reason code %q", ErrInvalidEvaluation, e.ReasonCode)
	case len(e.ReasonDetail) > 1000:
		return fmt.Errorf("%w: reason detail longer than 1000 bytes", ErrInvalidEvaluation)
	case e.WorkGeneration < 1:
		return fmt.Errorf("%w: work generation %d", ErrInvalidEvaluation, e.WorkGeneration)
	}
	if e.DecisionObject != nil {
		if err := e.DecisionObject.Validate(); err != nil {
			return fmt.Errorf("%w: decision: %w", ErrInvalidEvaluation, err)
		}
	}
	return nil
}

// RecordEvaluationTx records, in the caller's transaction, that a Work
// generation ended blocked or would need reconciliation: an insert-only
// evaluation with its visible reason, the Work evaluated, the fence
// awaiting_finalization with that reason. No ledger, no terminal state; a
// new input (closure, settlement) schedules the next generation. Without an
// applied closure only the Work-before-closure branch is possible
// (blocked, closure_event_not_applied). The same evaluation again is
// Replayed; another for the same generation is ErrEvaluationConflict.
func RecordEvaluationTx(ctx context.Context, tx pgx.Tx, e Evaluation) (EvaluationResult, error) {
	if err := e.validate(); err != nil {
		return EvaluationResult{}, err
	}
	fence, err := queries.FenceLock(ctx, tx, e.FenceID)
	if err != nil {
		return EvaluationResult{}, fmt.Errorf("lock fence %s: %w", e.FenceID, notFound(err, ErrFenceNotFound))
	}
	stored, err := queries.EvaluationGet(ctx, tx, dbsqlc.EvaluationGetParams{BillingFinalizationFenceID: e.FenceID, WorkGeneration: e.WorkGeneration})
	switch {
	case err == nil:
		return replayEvaluation(e, stored)
	case !errors.Is(err, pgx.ErrNoRows):
		return EvaluationResult{}, fmt.Errorf("read evaluation: %w", err)
	}
	if fence.CoordinationState != FencePendingEvaluation || fence.ActiveWorkGeneration == nil || *fence.ActiveWorkGeneration != e.WorkGeneration {
		return EvaluationResult{}, fmt.Errorf("%w: fence %s is %s at generation %d, evaluation is for generation %d",
			ErrStaleWork, e.FenceID, fence.CoordinationState, fence.LatestWorkGeneration, e.WorkGeneration)
	}
	work, err := queries.WorkLock(ctx, tx, dbsqlc.WorkLockParams{BillingFinalizationFenceID: e.FenceID, WorkGeneration: e.WorkGeneration})
	if err != nil {
		return EvaluationResult{}, fmt.Errorf("lock work: %w", err)
	}
	// guard BI-1.evaluation-operation-mismatch
	if work.BillingFinalizationOperationID != e.OperationID {
		return EvaluationResult{}, fmt.Errorf("%w: generation %d is operation %s, evaluation names %s",
			ErrStaleWork, e.WorkGeneration, work.BillingFinalizationOperationID, e.OperationID)
	}
	beforeClosure := fence.ClosureWatermarkState != "applied"
	if (beforeClosure || work.WorkState == WorkWaiting) && (e.Outcome != EvaluationBlocked || e.ReasonCode != ReasonClosureEventNotApplied) {
		return EvaluationResult{}, fmt.Errorf("%w: fence %s has no applied closure: only blocked/%s", ErrClosureNotApplied, e.FenceID, ReasonClosureEventNotApplied)
	}
	now, err := txNow(ctx, tx)
	if err != nil {
		return EvaluationResult{}, err
	}
	p := dbsqlc.EvaluationInsertParams{
		BillingFinalizationFenceID: e.FenceID, WorkGeneration: e.WorkGeneration, BillingFinalizationOperationID: e.OperationID,
		Outcome: e.Outcome, ReasonCode: e.ReasonCode, ReasonDetail: e.ReasonDetail, RecordedAt: now,
	}
	if q := e.DecisionObject; q != nil {
		alg := string(q.DigestAlgorithmVersion)
		p.DecisionRef, p.DecisionSchemaVersion, p.DecisionDigestAlgorithmVersion, p.DecisionDigest = &q.Ref, &q.SchemaVersion, &alg, &q.Digest
	}
	if err := queries.EvaluationInsert(ctx, tx, p); err != nil {
		return EvaluationResult{}, fmt.Errorf("insert evaluation: %w", err)
	}
	if err := queries.WorkFinish(ctx, tx, dbsqlc.WorkFinishParams{
		BillingFinalizationFenceID: e.FenceID, WorkGeneration: e.WorkGeneration, WorkState: WorkEvaluated, FinishedAt: &now,
	}); err != nil {
		return EvaluationResult{}, fmt.Errorf("finish work: %w", err)
	}
	reason := e.Outcome + ":" + e.ReasonCode
	if err := queries.FenceAwait(ctx, tx, dbsqlc.FenceAwaitParams{BillingFinalizationFenceID: e.FenceID, WaitingReason: &reason, UpdatedAt: &now}); err != nil {
		return EvaluationResult{}, fmt.Errorf("fence awaits: %w", err)
	}
	return EvaluationResult{Evaluation: e}, nil
}

// FinishBeforeClosureTx is the Work-before-closure branch: a Work that runs
// while the fence has no applied closure ends blocked with
// closure_event_not_applied, without any Execution read; the closure event
// schedules the next generation.
func FinishBeforeClosureTx(ctx context.Context, tx pgx.Tx, fenceID string, generation int64, operationID string) (EvaluationResult, error) {
	return RecordEvaluationTx(ctx, tx, Evaluation{
		FenceID: fenceID, WorkGeneration: generation, OperationID: operationID, Outcome: EvaluationBlocked,
		ReasonCode: ReasonClosureEventNotApplied, ReasonDetail: "execution.run-finalization.closed@1 not applied by the coordinator yet",
	})
}

func replayEvaluation(e Evaluation, s dbsqlc.EvaluationGetRow) (EvaluationResult, error) {
	var storedDecision *strict.Quadruple
	if s.DecisionRef != nil {
		q := quad(*s.DecisionRef, deref(s.DecisionSchemaVersion), deref(s.DecisionDigestAlgorithmVersion), deref(s.DecisionDigest))
		storedDecision = &q
	}
	same := s.BillingFinalizationOperationID == e.OperationID && s.Outcome == e.Outcome && s.ReasonCode == e.ReasonCode &&
		s.ReasonDetail == e.ReasonDetail && (storedDecision == nil) == (e.DecisionObject == nil) &&
		(storedDecision == nil || *storedDecision == *e.DecisionObject)
	// guard BI-1.evaluation-conflict
	if !same {
		return EvaluationResult{}, fmt.Errorf("%w: fence %s generation %d was %s/%s", ErrEvaluationConflict, e.FenceID, e.WorkGeneration, s.Outcome, s.ReasonCode)
	}
	return EvaluationResult{Evaluation: e, Replayed: true}, nil
}
