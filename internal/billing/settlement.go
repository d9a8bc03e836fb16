package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/dbsqlc"
)

var (
	// ErrSettlementConflict: the same settlement-input state version with
	// another snapshot, or another dimension identity (non-retryable).
	ErrSettlementConflict = errors.New("billing: settlement input conflicts with the watermark")
	// ErrFinalized: the reservation is finalized; later settlement inputs
	// belong to the settlement catch-up (BI-3), not to the finalization fence.
	ErrFinalized = errors.New("billing: reservation already finalized")
)

// SettlementInput is one metering.settlement-input.current-changed@1 as the
// finalization fence needs it: the dimension and its Current
// SettlementInputSnapshot@1.
type SettlementInput struct {
	EventID               string
	BillingReservationID  string
	RunID                 string
	RunStepID             string
	ExecutionAttemptID    string
	ChargeDimensionKey    string
	SettlementDimensionID string
	EconomicIdentity      envelope.SettlementEconomicIdentityV1
	Snapshot              strict.Quadruple
	StateVersion          int64
}

// Settlement outcomes.
const (
	// SettlementWorkScheduled: the watermark advanced and a new Work
	// generation was scheduled (finalization_work_scheduled).
	SettlementWorkScheduled = "finalization_work_scheduled"
	// SettlementAlreadyObserved: a higher state version was observed
	// before; nothing changed.
	SettlementAlreadyObserved = "already_observed"
	// SettlementWaitingForClosure: the watermark advanced durably, but the
	// fence has no applied closure yet: the caller commits the watermark,
	// writes no receipt and answers retryable.
	SettlementWaitingForClosure = "waiting_for_closure"
	// SettlementHeldForResolution: the fence is in a reconciliation case;
	// the watermark advanced, and nothing else: no trigger, no Work, the
	// case is not left (held_for_resolution). The case's applied
	// resolution folds every watermark into the next generation.
	SettlementHeldForResolution = "held_for_resolution"
)

// Held is the case a held_for_resolution input waits on.
type Held struct {
	FenceRevision            int64
	ReconciliationCaseRef    string
	ReconciliationGeneration int64
}

// SettlementAdvance is what ApplySettlementInputTx did.
type SettlementAdvance struct {
	Outcome       string
	InboxRevision int64
	// Scheduled is set for SettlementWorkScheduled.
	Scheduled *Scheduled
	// Held is set for SettlementHeldForResolution.
	Held *Held
	// Highest is the watermark's snapshot and state version (every outcome).
	Highest      strict.Quadruple
	HighestState int64
}

// ApplySettlementInputTx advances, in the caller's inbox transaction, the
// per-dimension settlement-input watermark of a reservation that is not
// finalized yet, monotonically, and schedules the next finalization Work
// generation. It errs ErrFenceNotBindable (retryable: no fence for the
// run yet), ErrFinalized (the catch-up's branch), ErrSettlementConflict
// (same state version, another snapshot; or another dimension identity).
// Before the closure is applied the watermark advances and the outcome is
// SettlementWaitingForClosure (retryable for the event, no receipt). While
// the fence is reconciliation_required the outcome is
// SettlementHeldForResolution.
func ApplySettlementInputTx(ctx context.Context, tx pgx.Tx, in SettlementInput) (SettlementAdvance, error) {
	byRun, err := queries.FenceLockByRun(ctx, tx, in.RunID)
	if errors.Is(err, pgx.ErrNoRows) {
		return SettlementAdvance{}, fmt.Errorf("%w: run %s", ErrFenceNotBindable, in.RunID)
	}
	if err != nil {
		return SettlementAdvance{}, fmt.Errorf("lock fence: %w", err)
	}
	fence := dbsqlc.FenceLockRow(byRun)
	// guard BFC-6.run-reservation-mismatch
	if fence.BillingReservationID != in.BillingReservationID {
		return SettlementAdvance{}, fmt.Errorf("%w: run %s belongs to reservation %s, not %s", ErrSettlementConflict, in.RunID, fence.BillingReservationID, in.BillingReservationID)
	}
	if fence.CoordinationState == FenceCommitted {
		return SettlementAdvance{}, fmt.Errorf("%w: %s", ErrFinalized, in.BillingReservationID)
	}
	identityBytes, err := jcs.Marshal(in.EconomicIdentity.Map())
	if err != nil {
		return SettlementAdvance{}, fmt.Errorf("%w: economic identity: %w", ErrSettlementConflict, err)
	}
	identity := string(identityBytes)
	now, err := txNow(ctx, tx)
	if err != nil {
		return SettlementAdvance{}, err
	}
	adv := SettlementAdvance{Highest: in.Snapshot, HighestState: in.StateVersion, InboxRevision: 1}
	mark, err := queries.SettlementMarkLock(ctx, tx, dbsqlc.SettlementMarkLockParams{
		BillingReservationID: in.BillingReservationID, SettlementDimensionID: in.SettlementDimensionID})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		err = queries.SettlementMarkInsert(ctx, tx, dbsqlc.SettlementMarkInsertParams{
			BillingReservationID: in.BillingReservationID, SettlementDimensionID: in.SettlementDimensionID, RunID: in.RunID,
			RunStepID: in.RunStepID, ExecutionAttemptID: in.ExecutionAttemptID, ChargeDimensionKey: in.ChargeDimensionKey,
			SettlementEconomicIdentity: identity, SettlementInputSnapshotRef: in.Snapshot.Ref,
			SettlementInputSnapshotSchemaVersion:          in.Snapshot.SchemaVersion,
			SettlementInputSnapshotDigestAlgorithmVersion: string(in.Snapshot.DigestAlgorithmVersion),
			SettlementInputSnapshotDigest:                 in.Snapshot.Digest, SettlementInputStateVersion: in.StateVersion,
			LastEventID: in.EventID, UpdatedAt: now,
		})
		if err != nil {
			return SettlementAdvance{}, fmt.Errorf("insert settlement watermark: %w", err)
		}
	case err != nil:
		return SettlementAdvance{}, fmt.Errorf("lock settlement watermark: %w", err)
	default:
		stored := quad(mark.SettlementInputSnapshotRef, mark.SettlementInputSnapshotSchemaVersion,
			mark.SettlementInputSnapshotDigestAlgorithmVersion, mark.SettlementInputSnapshotDigest)
		// guard BFC-6.dimension-identity
		if mark.RunID != in.RunID || mark.RunStepID != in.RunStepID || mark.ExecutionAttemptID != in.ExecutionAttemptID ||
			mark.ChargeDimensionKey != in.ChargeDimensionKey || mark.SettlementEconomicIdentity != identity {
			return SettlementAdvance{}, fmt.Errorf("%w: dimension %s identity differs", ErrSettlementConflict, in.SettlementDimensionID)
		}
		switch {
		case mark.SettlementInputStateVersion > in.StateVersion:
			return SettlementAdvance{Outcome: SettlementAlreadyObserved, InboxRevision: mark.InboxRevision,
				Highest: stored, HighestState: mark.SettlementInputStateVersion}, nil
		// guard BFC-6.same-version-other-snapshot
		case mark.SettlementInputStateVersion == in.StateVersion && stored != in.Snapshot:
			return SettlementAdvance{}, fmt.Errorf("%w: state version %d is %s, event carries %s", ErrSettlementConflict, in.StateVersion, stored.Ref, in.Snapshot.Ref)
		case mark.SettlementInputStateVersion == in.StateVersion:
			// This event advanced the watermark before (it waited for the
			// closure): continue to schedule.
			adv.InboxRevision = mark.InboxRevision
		default:
			if err := queries.SettlementMarkAdvance(ctx, tx, dbsqlc.SettlementMarkAdvanceParams{
				BillingReservationID: in.BillingReservationID, SettlementDimensionID: in.SettlementDimensionID,
				SettlementInputSnapshotRef: in.Snapshot.Ref, SettlementInputSnapshotSchemaVersion: in.Snapshot.SchemaVersion,
				SettlementInputSnapshotDigestAlgorithmVersion: string(in.Snapshot.DigestAlgorithmVersion),
				SettlementInputSnapshotDigest:                 in.Snapshot.Digest, SettlementInputStateVersion: in.StateVersion,
				LastEventID: in.EventID, UpdatedAt: now,
			}); err != nil {
				return SettlementAdvance{}, fmt.Errorf("advance settlement watermark: %w", err)
			}
			adv.InboxRevision = mark.InboxRevision + 1
		}
	}
	if fence.CoordinationState == FenceReconciliationRequired {
		adv.Outcome = SettlementHeldForResolution
		adv.Held = &Held{FenceRevision: fence.FinalizationFenceRevision, ReconciliationCaseRef: deref(fence.ReconciliationCaseRef),
			ReconciliationGeneration: fence.ReconciliationGeneration}
		return adv, nil
	}
	if fence.ClosureWatermarkState != "applied" {
		adv.Outcome = SettlementWaitingForClosure
		return adv, nil
	}
	trig, work, err := nextGeneration(ctx, tx, fence, nil, now)
	if err != nil {
		return SettlementAdvance{}, err
	}
	s, err := advanceFence(ctx, tx, fence, trig, work, now)
	if err != nil {
		return SettlementAdvance{}, err
	}
	adv.Outcome, adv.Scheduled = SettlementWorkScheduled, &s
	return adv, nil
}

// SettlementInputOf strictly decodes metering.settlement-input.current-changed@1
// (exactly that pair; the payload against its description) into the input
// ApplySettlementInputTx takes, checking what the envelope and payload must
// agree on: the aggregate is the contracts-derived settlement dimension id
// and its revision the snapshot state version. Errors are the event's
// fault (non-retryable for a consumer).
func SettlementInputOf(env *envelope.Envelope) (SettlementInput, error) {
	p, err := envelope.PayloadOf[envelope.MeteringSettlementInputCurrentChangedV1Payload](env)
	if err != nil {
		return SettlementInput{}, fmt.Errorf("%w: %w", ErrSettlementConflict, err)
	}
	dim := envelope.SettlementDimensionID(p.BillingReservationID, p.RunID, p.RunStepID, p.ExecutionAttemptID, p.ChargeDimensionKey)
	switch {
	case p.SettlementDimensionID != dim:
		return SettlementInput{}, fmt.Errorf("%w: settlementDimensionId %s is not the derived %s", ErrSettlementConflict, p.SettlementDimensionID, dim)
	case env.AggregateID != dim || env.AggregateRevision != p.SettlementInputStateVersion:
		return SettlementInput{}, fmt.Errorf("%w: aggregate %s@%d is not dimension %s@%d", ErrSettlementConflict,
			env.AggregateID, env.AggregateRevision, dim, p.SettlementInputStateVersion)
	}
	return SettlementInput{
		EventID: env.EventID, BillingReservationID: p.BillingReservationID, RunID: p.RunID, RunStepID: p.RunStepID,
		ExecutionAttemptID: p.ExecutionAttemptID, ChargeDimensionKey: p.ChargeDimensionKey, SettlementDimensionID: dim,
		EconomicIdentity: p.SettlementEconomicIdentity, Snapshot: p.SettlementInputSnapshot(), StateVersion: p.SettlementInputStateVersion,
	}, nil
}
