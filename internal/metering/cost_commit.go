package metering

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
)

func commitCost(ctx context.Context, tx pgx.Tx, a *Attempt, plan *costPlan, retry time.Duration) (CostResult, error) {
	h := a.Head
	if _, err := lockFence(ctx, tx, h.ExecutionAttemptID); err != nil {
		return CostResult{}, err
	}
	latest, err := laneLatest(ctx, tx, h)
	if err != nil {
		return CostResult{}, err
	}
	if latest > h.WorkGeneration {
		f, err := finishSupersededTx(ctx, tx, h)
		if err != nil {
			return CostResult{}, err
		}
		return CostResult{State: receipt.FinishSuperseded, Finished: f}, nil
	}
	if err := fenceLatestAttemptTx(ctx, tx, h); err != nil {
		return CostResult{}, err
	}
	if res, done, err := storedCostResult(ctx, tx, h); err != nil || done {
		return res, err
	}
	if plan.conflict != nil {
		return blockCostTx(ctx, tx, h, plan, retry)
	}
	res := CostResult{}
	p := plan.processing
	if plan.cost != nil {
		stored, same, err := insertCostFact(ctx, tx, h, plan.cost)
		if err != nil {
			return CostResult{}, err
		}
		if !same {
			return repositoryConflict(ctx, tx, h, plan, "stored_cost_fact_differs", retry)
		}
		res.Cost = stored
		q := stored.Fact
		p.ProviderCostFact = &q
	}
	storedP, same, err := insertProcessing(ctx, tx, h, p, res.Cost)
	if err != nil {
		return CostResult{}, err
	}
	if !same {
		return repositoryConflict(ctx, tx, h, plan, "stored_processing_fact_differs", retry)
	}
	res.Processing = storedP
	f, err := finishTx(ctx, tx, h, receipt.FinishOutcome{Kind: receipt.LaneProviderCost,
		State: receipt.FinishAvailabilityProcessed, Processing: &storedP.Processing})
	if err != nil {
		return CostResult{}, err
	}
	res.Finished = f
	res.State = laneStateOf(storedP.Outcome)
	c := costCoordination{Generation: h.WorkGeneration, State: res.State, ProcessingRef: storedP.Processing.Ref,
		ProcessingDigest: storedP.Processing.Digest, FinishedRef: f.Finished.Ref, FinishedDigest: f.Finished.Digest}
	if res.State == receipt.StateReconciliationRequired {
		c.AvailabilityState, c.StateReasonCode = storedP.AvailabilityState, storedP.StateReasonCode
	}
	if err := casCostCoordination(ctx, tx, h, c); err != nil {
		return CostResult{}, err
	}
	return res, nil
}

// storedCostResult returns the stored result when the Work is already
// finished (a replay of a committed attempt whose answer was lost).
func storedCostResult(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead) (CostResult, bool, error) {
	var finished, processing, cost string
	err := tx.QueryRow(ctx, qCostWorkResult, pgx.NamedArgs{"work_ref": h.Work.Ref}).Scan(&finished, &processing, &cost)
	if errors.Is(err, pgx.ErrNoRows) {
		return CostResult{}, false, nil
	}
	if err != nil {
		return CostResult{}, false, fmt.Errorf("read stored cost result: %w", err)
	}
	var res CostResult
	if res.Finished, err = receipt.DecodeMeteringInputWorkAttemptFinished([]byte(finished)); err != nil {
		return CostResult{}, false, fmt.Errorf("stored finish: %w", err)
	}
	res.State = res.Finished.Outcome.State
	if processing != "" {
		if res.Processing, err = meterfacts.DecodeProviderCostAvailabilityProcessingFact([]byte(processing)); err != nil {
			return CostResult{}, false, fmt.Errorf("stored processing fact: %w", err)
		}
		res.State = laneStateOf(res.Processing.Outcome)
	}
	if cost != "" {
		if res.Cost, err = meterfacts.DecodeProviderCostFact([]byte(cost)); err != nil {
			return CostResult{}, false, fmt.Errorf("stored cost fact: %w", err)
		}
	}
	return res, true, nil
}

// laneStateOf is the provider cost lane state a processing outcome fixes.
func laneStateOf(outcome string) string {
	return map[string]string{
		meterfacts.OutcomeAvailableApplied:     receipt.StateAvailabilityProcessed,
		meterfacts.OutcomeWaitingForEvidence:   receipt.StateWaitingForEvidence,
		meterfacts.OutcomeNoCostEvidence:       receipt.StateNoCostEvidence,
		meterfacts.OutcomeReconciliationNeeded: receipt.StateReconciliationRequired,
	}[outcome]
}

// repositoryConflict: a stored fact of the same Work recomputes to another
// digest (provider_cost_repository). Nothing of this attempt was written
// (the inserts compared and did nothing), so the attempt blocks instead.
func repositoryConflict(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, plan *costPlan, reason string, retry time.Duration) (CostResult, error) {
	var d digest.Digest
	var err error
	if reason == "stored_cost_fact_differs" {
		d, err = meterfacts.DigestOf(plan.cost)
	} else {
		d, err = meterfacts.DigestOf(plan.processing)
	}
	if err != nil {
		return CostResult{}, fmt.Errorf("repository conflict candidate: %w", err)
	}
	plan.conflict = &costConflict{stage: "provider_cost_repository", reason: reason, candidate: d}
	return blockCostTx(ctx, tx, h, plan, retry)
}

func insertCostFact(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, f *meterfacts.ProviderCostFact) (*meterfacts.ProviderCostFact, bool, error) {
	f.RecordedAt = time.Now().UTC().Truncate(time.Microsecond)
	body, err := meterfacts.Seal(f)
	if err != nil {
		return nil, false, fmt.Errorf("seal provider cost fact: %w", err)
	}
	var ref, dg, stored string
	if err := tx.QueryRow(ctx, qCostFactInsert, pgx.NamedArgs{"ref": f.Fact.Ref, "digest": f.Fact.Digest, "work_ref": h.Work.Ref,
		"attempt_number": h.AttemptNumber, "fencing_token": h.FencingToken,
		"attempt_id": h.ExecutionAttemptID, "deployment_id": h.Lane.GatewayDeploymentID, "dimension_key": h.Lane.SourceEvidenceDimensionKey,
		"currency": f.Currency, "amount": f.Amount, "body": string(body)}).Scan(&ref, &dg, &stored); err != nil {
		return nil, false, fmt.Errorf("insert provider cost fact: %w", err)
	}
	if dg != f.Fact.Digest {
		return nil, false, nil
	}
	out, err := meterfacts.DecodeProviderCostFact([]byte(stored))
	if err != nil {
		return nil, false, fmt.Errorf("stored provider cost fact: %w", err)
	}
	return out, true, nil
}

func insertProcessing(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, p *meterfacts.ProviderCostAvailabilityProcessingFact,
	cost *meterfacts.ProviderCostFact) (*meterfacts.ProviderCostAvailabilityProcessingFact, bool, error) {
	p.ProcessedAt = time.Now().UTC().Truncate(time.Microsecond)
	body, err := meterfacts.Seal(p)
	if err != nil {
		return nil, false, fmt.Errorf("seal cost processing fact: %w", err)
	}
	var costRef *string
	if cost != nil {
		costRef = &cost.Fact.Ref
	}
	var ref, dg, stored string
	if err := tx.QueryRow(ctx, qCostProcessing, pgx.NamedArgs{"ref": p.Processing.Ref, "digest": p.Processing.Digest,
		"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber, "fencing_token": h.FencingToken, "availability_state": p.AvailabilityState, "outcome": p.Outcome, "cost_fact_ref": costRef,
		"body": string(body)}).Scan(&ref, &dg, &stored); err != nil {
		return nil, false, fmt.Errorf("insert cost processing fact: %w", err)
	}
	if dg != p.Processing.Digest {
		return nil, false, nil
	}
	out, err := meterfacts.DecodeProviderCostAvailabilityProcessingFact([]byte(stored))
	if err != nil {
		return nil, false, fmt.Errorf("stored cost processing fact: %w", err)
	}
	return out, true, nil
}

// blockCostTx writes the conflict evidence and the attempt's Blocked fact,
// sets the lane blocked_on_processing_conflict and releases the lease: the
// same Work (operation, generation) stays queued for a new attempt. No
// processing fact, cost fact, finish or terminal CAS.
func blockCostTx(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, plan *costPlan, retry time.Duration) (CostResult, error) {
	s, m := plan.snapshot, plan.manifest
	now := time.Now().UTC().Truncate(time.Microsecond)
	ev := &receipt.ProviderCostProcessingConflictEvidence{
		Evidence: strict.Quadruple{Ref: "pcpce-" + uuid.Must(uuid.NewV7()).String()},
		Work:     h.Work, OperationID: h.OperationID, WorkGeneration: h.WorkGeneration,
		RunID: m.RunID, RunStepID: m.RunStepID, ExecutionAttemptID: h.ExecutionAttemptID,
		GatewayDeploymentID: h.Lane.GatewayDeploymentID, SourceEvidenceDimensionKey: h.Lane.SourceEvidenceDimensionKey,
		AttemptExecutionManifest: s.AttemptManifest, AttemptRouteBinding: s.Binding, GatewayRouteSnapshot: s.RouteSnapshot,
		CostAvailability: s.Snapshot, CostAvailabilityVersion: s.StateVersion,
		Cause: receipt.ProviderCostCause{Kind: receipt.CostCauseMeteringDeterministicValidation, ValidationStage: plan.conflict.stage,
			ConflictingCandidateDigest: plan.conflict.candidate, ReasonCode: plan.conflict.reason},
		DetectedAt: now,
	}
	if err := ev.Seal(); err != nil {
		return CostResult{}, fmt.Errorf("seal conflict evidence: %w", err)
	}
	evBody, err := jcs.Marshal(ev.ToJSON())
	if err != nil {
		return CostResult{}, fmt.Errorf("conflict evidence body: %w", err)
	}
	b := &receipt.MeteringInputWorkAttemptBlocked{
		Blocked:         strict.Quadruple{Ref: "miwb-" + uuid.Must(uuid.NewV7()).String()},
		WorkAttemptHead: h,
		BlockingCause:   receipt.BlockingCause{Kind: receipt.CauseProviderCostProcessingConflict, Fact: ev.Evidence},
		BlockedAt:       now,
	}
	if err := b.Seal(); err != nil {
		return CostResult{}, fmt.Errorf("seal blocked: %w", err)
	}
	bBody, err := jcs.Marshal(b.ToJSON())
	if err != nil {
		return CostResult{}, fmt.Errorf("blocked body: %w", err)
	}
	var bDigest, bStored, evDigest, evStored string
	if err := tx.QueryRow(ctx, qCostBlockInsert, pgx.NamedArgs{"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber,
		"fencing_token": h.FencingToken, "blocked_ref": b.Blocked.Ref, "blocked_digest": b.Blocked.Digest, "blocked_body": string(bBody),
		"evidence_ref": ev.Evidence.Ref, "evidence_digest": ev.Evidence.Digest, "evidence_body": string(evBody)}).Scan(&bDigest, &bStored, &evDigest, &evStored); err != nil {
		return CostResult{}, fmt.Errorf("insert blocked: %w", err)
	}
	// guard ME-1.cost-block-conflict
	if bDigest != b.Blocked.Digest || evDigest != ev.Evidence.Digest {
		return CostResult{}, fmt.Errorf("%w: attempt %d of %s already blocked with another body", ErrFinishConflict, h.AttemptNumber, h.Work.Ref)
	}
	if b, err = receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(bStored)); err != nil {
		return CostResult{}, fmt.Errorf("stored blocked: %w", err)
	}
	if ev, err = receipt.DecodeProviderCostProcessingConflictEvidence([]byte(evStored)); err != nil {
		return CostResult{}, fmt.Errorf("stored conflict evidence: %w", err)
	}
	if err := casCostCoordination(ctx, tx, h, costCoordination{Generation: h.WorkGeneration, State: receipt.StateBlockedOnProcessingConflict,
		BlockedRef: b.Blocked.Ref, BlockedDigest: b.Blocked.Digest}); err != nil {
		return CostResult{}, err
	}
	if _, err := tx.Exec(ctx, qCostWorkRelease, pgx.NamedArgs{"work_ref": h.Work.Ref, "retry_seconds": retry.Seconds()}); err != nil {
		return CostResult{}, fmt.Errorf("release blocked work: %w", err)
	}
	return CostResult{State: receipt.StateBlockedOnProcessingConflict, Blocked: b, Evidence: ev}, nil
}
