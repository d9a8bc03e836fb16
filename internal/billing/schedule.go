package billing

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/dbsqlc"
)

// Scheduled is a new Work generation an input scheduled.
type Scheduled struct {
	// FenceRevision is the fence's revision after the transition.
	FenceRevision int64
	Generation    int64
	Trigger       strict.Quadruple
	Work          strict.Quadruple
	OperationID   string
}

// nextGeneration builds and inserts the next generation's trigger snapshot
// (every watermark the fence has now, plus closure when the caller is
// applying it) and its pending Work. The caller then records what it must
// (the closure row) and calls advanceFence.
func nextGeneration(ctx context.Context, tx pgx.Tx, fence dbsqlc.FenceLockRow, closure *ClosureMark, now time.Time) (*TriggerSnapshot, *Work, error) {
	res, err := queries.ReservationLock(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return nil, nil, fmt.Errorf("lock reservation: %w", err)
	}
	if closure == nil {
		stored, err := queries.ClosureByFence(ctx, tx, fence.BillingFinalizationFenceID)
		switch {
		case err == nil:
			closure = closureMarkOf(stored)
		case err != pgx.ErrNoRows:
			return nil, nil, fmt.Errorf("read closure watermark: %w", err)
		}
	}
	rows, err := queries.SettlementMarks(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return nil, nil, fmt.Errorf("read settlement watermarks: %w", err)
	}
	marks := make([]SettlementMark, 0, len(rows))
	for _, r := range rows {
		marks = append(marks, SettlementMark{SettlementDimensionID: r.SettlementDimensionID, StateVersion: r.SettlementInputStateVersion,
			Snapshot: quad(r.SettlementInputSnapshotRef, r.SettlementInputSnapshotSchemaVersion,
				r.SettlementInputSnapshotDigestAlgorithmVersion, r.SettlementInputSnapshotDigest)})
	}
	trig := &TriggerSnapshot{
		Snapshot: strict.Quadruple{Ref: newRef("bft-")}, FenceID: fence.BillingFinalizationFenceID,
		BillingReservationID: fence.BillingReservationID, BillingAccountID: res.BillingAccountID, RunID: fence.RunID,
		FenceRevision: fence.FinalizationFenceRevision + 1, WorkGeneration: fence.LatestWorkGeneration + 1,
		Manifest: quad(res.RunAdmissionManifestRef, res.RunAdmissionManifestSchemaVersion,
			res.RunAdmissionManifestDigestAlgorithmVersion, res.RunAdmissionManifestDigest),
		Closure: closure, Settlement: marks, CapturedAt: now,
	}
	w, err := insertGeneration(ctx, tx, trig, WorkPending, func(string) error { return nil })
	if err != nil {
		return nil, nil, err
	}
	return trig, w, nil
}

// advanceFence supersedes the previous active Work and makes the new
// generation the fence's active one (revision + 1).
func advanceFence(ctx context.Context, tx pgx.Tx, fence dbsqlc.FenceLockRow, trig *TriggerSnapshot, w *Work, now time.Time) (Scheduled, error) {
	if fence.ActiveWorkGeneration != nil {
		if err := queries.WorkSupersede(ctx, tx, dbsqlc.WorkSupersedeParams{
			BillingFinalizationFenceID: fence.BillingFinalizationFenceID, WorkGeneration: *fence.ActiveWorkGeneration, FinishedAt: &now,
		}); err != nil {
			return Scheduled{}, fmt.Errorf("supersede work: %w", err)
		}
	}
	closureState, settlementState := "none", "none"
	if trig.Closure != nil {
		closureState = "applied"
	}
	if len(trig.Settlement) > 0 {
		settlementState = "advanced"
	}
	if err := queries.FenceAdvance(ctx, tx, dbsqlc.FenceAdvanceParams{
		BillingFinalizationFenceID: fence.BillingFinalizationFenceID, WorkGeneration: &w.Generation,
		ClosureWatermarkState: closureState, SettlementInputWatermarkState: settlementState, UpdatedAt: &now,
	}); err != nil {
		return Scheduled{}, fmt.Errorf("advance fence: %w", err)
	}
	return Scheduled{FenceRevision: trig.FenceRevision, Generation: w.Generation, Trigger: trig.Snapshot, Work: w.Work, OperationID: w.OperationID}, nil
}

func closureMarkOf(r dbsqlc.ClosureByFenceRow) *ClosureMark {
	return &ClosureMark{
		EventID:        r.ClosureEventID,
		EnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(r.ClosureEventEnvelopeDigestAlgorithmVersion), Value: r.ClosureEventEnvelopeSha256},
		RunExecutionFinalization: quad(r.RunExecutionFinalizationRef, r.RunExecutionFinalizationSchemaVersion,
			r.RunExecutionFinalizationDigestAlgorithmVersion, r.RunExecutionFinalizationDigest),
		StateVersion: r.RunExecutionFinalizationStateVersion,
		AttemptSetManifest: quad(r.AttemptSetManifestRef, r.AttemptSetManifestSchemaVersion,
			r.AttemptSetManifestDigestAlgorithmVersion, r.AttemptSetManifestDigest),
		AttemptCount: r.AttemptCount,
	}
}
