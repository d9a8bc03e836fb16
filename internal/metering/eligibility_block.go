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
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

// block writes the attempt's Blocked@1 with its
// EligibilityProcessingConflictEvidence@1; the Work stays queued (active)
// and a later attempt retries it once the cause is fixed.
func (p *Processor) block(ctx context.Context, a *Attempt, in *eligibilityInputs, c *conflict) (Outcome, error) {
	h := a.Head
	cand, err := digest.Of(digest.JCSSHA256V1, c.candidate)
	if err != nil {
		return Outcome{}, fmt.Errorf("conflict candidate digest: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ev := &receipt.EligibilityProcessingConflictEvidence{
		Evidence: strict.Quadruple{Ref: "mepce-" + uuid.Must(uuid.NewV7()).String()}, ExecutionAttemptID: h.ExecutionAttemptID,
		Work: h.Work, OperationID: h.OperationID, WorkGeneration: h.WorkGeneration, LaneTriggerDigest: h.LaneTriggerDigest,
		ValidationStage: c.stage, ConflictingCandidateDigest: cand, ReasonCode: c.reason, ObservedAt: now,
	}
	if in == nil {
		return Outcome{}, fmt.Errorf("%w: %s", ErrEligibilitySource, h.ExecutionAttemptID) // never forged identities
	}
	src := in.source
	ev.RunID, ev.RunStepID, ev.AttemptExecutionManifest, ev.ExecutionEligibilityFact = src.RunID, src.RunStepID, src.AttemptManifest, src.Fact
	if err := ev.Seal(); err != nil {
		return Outcome{}, fmt.Errorf("seal conflict evidence: %w", err)
	}
	b := &receipt.MeteringInputWorkAttemptBlocked{
		Blocked: strict.Quadruple{Ref: "miwb-" + uuid.Must(uuid.NewV7()).String()}, WorkAttemptHead: h,
		BlockingCause: receipt.BlockingCause{Kind: receipt.CauseEligibilityProcessingConflict, Fact: ev.Evidence}, BlockedAt: now,
	}
	if err := b.Seal(); err != nil {
		return Outcome{}, fmt.Errorf("seal blocked: %w", err)
	}
	evBody, err := jcs.Marshal(ev.ToJSON())
	if err != nil {
		return Outcome{}, err
	}
	bBody, err := jcs.Marshal(b.ToJSON())
	if err != nil {
		return Outcome{}, err
	}
	return db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
		moved, err := lockCurrentWork(ctx, tx, a)
		if err != nil {
			return Outcome{}, err
		}
		if moved {
			f, err := finishSupersededTx(ctx, tx, h)
			return Outcome{Finished: f}, err
		}
		if prev, err := sameBlock(ctx, tx, h, ev); prev != nil || err != nil {
			return Outcome{Blocked: prev}, err
		}
		var stored string
		if err := tx.QueryRow(ctx, qBlockInsert, pgx.NamedArgs{"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber,
			"fencing_token": h.FencingToken, "blocked_ref": b.Blocked.Ref, "blocked_digest": b.Blocked.Digest,
			"blocked_body": string(bBody), "evidence_ref": ev.Evidence.Ref, "evidence_digest": ev.Evidence.Digest,
			"evidence_body": string(evBody)}).Scan(&stored); err != nil {
			return Outcome{}, fmt.Errorf("insert blocked: %w", err)
		}
		got, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(stored))
		if err != nil {
			return Outcome{}, fmt.Errorf("stored blocked: %w", err)
		}
		return Outcome{Blocked: got}, nil
	})
}

// sameBlock returns the Work's latest Blocked@1 when its evidence records
// the same conflict (stage, reason, candidate digest) as ev: a Work retried
// while its cause persists keeps that one Blocked and evidence rather than
// adding a pair on every lease. nil when there is none or it differs.
func sameBlock(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, ev *receipt.EligibilityProcessingConflictEvidence) (*receipt.MeteringInputWorkAttemptBlocked, error) {
	var blockedBody string
	var evidenceBody *string
	err := tx.QueryRow(ctx, qBlockLatest, pgx.NamedArgs{"work_ref": h.Work.Ref}).Scan(&blockedBody, &evidenceBody)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read latest blocked: %w", err)
	}
	if evidenceBody == nil { // the latest block names an owner's conflict fact
		return nil, nil
	}
	prev, err := receipt.DecodeEligibilityProcessingConflictEvidence([]byte(*evidenceBody))
	if err != nil {
		return nil, fmt.Errorf("stored conflict evidence: %w", err)
	}
	if prev.ValidationStage != ev.ValidationStage || prev.ReasonCode != ev.ReasonCode || prev.ConflictingCandidateDigest != ev.ConflictingCandidateDigest {
		return nil, nil
	}
	b, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(blockedBody))
	if err != nil {
		return nil, fmt.Errorf("stored blocked: %w", err)
	}
	return b, nil
}

// ownerBlock writes the attempt's Blocked@1 on the owner's conflict fact
// (issue 32): blockingCause is the owner branch (cause) with the fact's
// quadruple, Metering writes no evidence of its own, and the Work stays
// queued with its lane blocked_on_owner_conflict; a later attempt retries it
// once the owner fixed the cause, or a newer generation supersedes it. While
// the same owner conflict persists a retry returns the stored Blocked@1.
func (p *Processor) ownerBlock(ctx context.Context, a *Attempt, oc *ownerConflictError) (Outcome, error) {
	h := a.Head
	now := time.Now().UTC().Truncate(time.Microsecond)
	b := &receipt.MeteringInputWorkAttemptBlocked{
		Blocked: strict.Quadruple{Ref: "miwb-" + uuid.Must(uuid.NewV7()).String()}, WorkAttemptHead: h,
		BlockingCause: receipt.BlockingCause{Kind: oc.cause, Fact: *oc.fact}, BlockedAt: now,
	}
	if err := b.Seal(); err != nil {
		return Outcome{}, fmt.Errorf("seal blocked: %w", err)
	}
	bBody, err := jcs.Marshal(b.ToJSON())
	if err != nil {
		return Outcome{}, err
	}
	return db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
		moved, err := lockCurrentWork(ctx, tx, a)
		if err != nil {
			return Outcome{}, err
		}
		if moved {
			f, err := finishSupersededTx(ctx, tx, h)
			return Outcome{Finished: f}, err
		}
		var prevBody string
		var prevKind, prevRef, prevDigest *string
		err = tx.QueryRow(ctx, qOwnerBlockLatest, pgx.NamedArgs{"work_ref": h.Work.Ref}).Scan(&prevBody, &prevKind, &prevRef, &prevDigest)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return Outcome{}, fmt.Errorf("read latest blocked: %w", err)
		case prevKind != nil && *prevKind == oc.cause && *prevRef == oc.fact.Ref && *prevDigest == oc.fact.Digest:
			prev, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(prevBody))
			if err != nil {
				return Outcome{}, fmt.Errorf("stored blocked: %w", err)
			}
			return Outcome{Blocked: prev}, nil
		}
		f := oc.fact
		var stored string
		if err := tx.QueryRow(ctx, qOwnerBlockInsert, pgx.NamedArgs{"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber,
			"fencing_token": h.FencingToken, "blocked_ref": b.Blocked.Ref, "blocked_digest": b.Blocked.Digest,
			"blocked_body": string(bBody), "owner_conflict_kind": oc.cause, "owner_conflict_fact_ref": f.Ref,
			"owner_conflict_fact_schema_version": f.SchemaVersion, "owner_conflict_fact_digest_algorithm_version": string(f.DigestAlgorithmVersion),
			"owner_conflict_fact_digest": f.Digest}).Scan(&stored); err != nil {
			return Outcome{}, fmt.Errorf("insert owner blocked: %w", err)
		}
		got, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(stored))
		if err != nil {
			return Outcome{}, fmt.Errorf("stored blocked: %w", err)
		}
		return Outcome{Blocked: got}, nil
	})
}
