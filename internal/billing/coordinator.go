package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/dbsqlc"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Delivery error codes of the coordinator (the shared inbox adds its own).
const (
	// Non-retryable.
	CodePairNotConsumed    = "pair_not_consumed"
	CodeClosureConflict    = "closure_conflict"
	CodeClosureIdentity    = "closure_identity_mismatch"
	CodeSettlementConflict = "settlement_input_conflict"
	// Retryable.
	CodeFenceNotBindable     = "fence_not_bindable"
	CodeClosureNotApplied    = "closure_event_not_applied"
	CodeResolutionConflict   = "resolution_conflict"
	CodeResolutionNotApplied = "resolution_not_applied"
)

var (
	// ErrPairNotConsumed: the pair is not one the coordinator decodes.
	ErrPairNotConsumed = errors.New("billing: event pair is not consumed by the finalization coordinator")
	// ErrClosureConflict: the run's fence already applied another closure event.
	ErrClosureConflict = errors.New("billing: the run already has another closure event applied")
	// ErrClosureIdentity: the closure event does not match the reservation Core admitted.
	ErrClosureIdentity = errors.New("billing: closure event does not match the admitted reservation")
	// ErrFenceNotBindable: no fence (yet) for the event's run (retryable).
	ErrFenceNotBindable = errors.New("billing: no finalization fence for the event's run yet")
)

// Coordinator is the Billing finalization coordinator consumer on
// billing_finalization_coordinator (an inbox.Consumer). It strictly decodes
// execution.run-finalization.closed@1: in one inbox transaction it locks
// the run's fence, records the closure watermark with the receipt, freezes
// a new trigger snapshot and schedules a new Work generation, and writes
// the work_scheduled BillingFinalizationCoordinatorConsumerReceipt@1. It
// never reads Execution: the closure event is self-contained, and the
// Work's owner reads come later (the finalization pipeline).
// billing.finalization-reconciliation-resolution.applied@1 of the fence's
// current case generation reopens evaluation (applyResolution).
type Coordinator struct {
	receipts *inbox.Table
	// Inbox gives Consume (a transport.ConsumerFunc) and ConsumeBatch
	// (several deliveries in one transaction; serve does not wire it: a
	// batch would keep earlier events' locks until its commit, see
	// cli.consumersFor).
	*inbox.Inbox
}

// CoordinatorConfig configures the coordinator.
type CoordinatorConfig struct {
	Inbox inbox.Config
}

// NewCoordinator builds the coordinator over the core database.
func NewCoordinator(pool db.Beginner, cfg CoordinatorConfig) (*Coordinator, error) {
	c := &Coordinator{receipts: inbox.NewTable("billing", "coordinator_receipts", false)}
	in, err := inbox.New(pool, c, cfg.Inbox)
	if err != nil {
		return nil, err
	}
	c.Inbox = in
	return c, nil
}

// Destination implements inbox.Consumer.
func (c *Coordinator) Destination() route.Destination { return route.BillingFinalizationCoordinator }

// Receipts implements inbox.Consumer.
func (c *Coordinator) Receipts() *inbox.Table { return c.receipts }

// ReceiptKey implements inbox.Consumer: (consumerName, eventId).
func (c *Coordinator) ReceiptKey(ev *inbox.Event) (inbox.Key, error) {
	return inbox.Key{ConsumerName: route.BillingFinalizationCoordinatorConsumer, EventID: ev.Envelope.EventID, Projection: route.NotApplicable}, nil
}

// ApplyTx implements inbox.Consumer.
func (c *Coordinator) ApplyTx(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env := ev.Envelope
	switch {
	case env.EventType == receipt.EventExecutionRunFinalizationClosed && env.EventSchemaVersion == "1":
		return c.applyClosure(ctx, tx, ev)
	case env.EventType == receipt.EventFinalizationReconciliationResolutionApplied && env.EventSchemaVersion == "1":
		return c.applyResolution(ctx, tx, ev)
	default:
		return inbox.Outcome{}, transport.NonRetryable(CodePairNotConsumed, fmt.Errorf("%w: %s (%s)", ErrPairNotConsumed, env.EventType, env.EventSchemaVersion))
	}
}

func (c *Coordinator) applyClosure(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env := ev.Envelope
	p, err := envelope.PayloadOf[envelope.ExecutionRunFinalizationClosedV1Payload](env)
	if err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeEnvelopeInvalid, err)
	}
	byRun, err := queries.FenceLockByRun(ctx, tx, p.RunID)
	fence := dbsqlc.FenceLockRow(byRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return inbox.Outcome{}, transport.Retryable(CodeFenceNotBindable, fmt.Errorf("%w: run %s", ErrFenceNotBindable, p.RunID))
	}
	if err != nil {
		return inbox.Outcome{}, fmt.Errorf("lock fence: %w", err)
	}
	if _, err := queries.ClosureByFence(ctx, tx, fence.BillingFinalizationFenceID); err == nil {
		// The receipt lookup found nothing for this event id, so this is a
		// second closure event for the run (EX-2: rejected).
		return inbox.Outcome{}, transport.NonRetryable(CodeClosureConflict, fmt.Errorf("%w: run %s, event %s", ErrClosureConflict, p.RunID, env.EventID))
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return inbox.Outcome{}, fmt.Errorf("read closure watermark: %w", err)
	}
	if fence.CoordinationState == FenceCommitted || fence.CoordinationState == FenceReconciliationRequired {
		return inbox.Outcome{}, transport.NonRetryable(CodeClosureConflict, fmt.Errorf("%w: fence %s is %s without a closure", ErrClosureConflict, fence.BillingFinalizationFenceID, fence.CoordinationState))
	}
	res, err := queries.ReservationLock(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return inbox.Outcome{}, fmt.Errorf("lock reservation: %w", err)
	}
	tenant := receipt.Tenant{Kind: env.TenantKind, ID: env.TenantID, WorkspaceID: env.WorkspaceID, ProjectID: env.ProjectID}
	if mismatch := closureMismatch(p, env, res); mismatch != "" {
		return inbox.Outcome{}, transport.NonRetryable(CodeClosureIdentity, fmt.Errorf("%w: %s", ErrClosureIdentity, mismatch))
	}
	mark := &ClosureMark{
		EventID: env.EventID, EnvelopeDigest: ev.Delivery.EnvelopeDigest,
		RunExecutionFinalization: p.RunExecutionFinalization(), StateVersion: p.RunExecutionFinalizationStateVersion,
		AttemptSetManifest: p.AttemptSetManifest(), AttemptCount: p.AttemptCount,
	}
	now := ev.Now.UTC()
	trig, work, err := nextGeneration(ctx, tx, fence, mark, now)
	if err != nil {
		return inbox.Outcome{}, err
	}
	r := &receipt.BillingFinalizationCoordinatorConsumerReceipt{
		Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bfcr-" + uuid.Must(uuid.NewV7()).String()},
			EventID: env.EventID, EventEnvelopeDigest: ev.Delivery.EnvelopeDigest},
		Source: receipt.CoordinatorSource{Kind: receipt.CoordinatorSourceExecutionClosure, Closure: &receipt.ExecutionClosureSource{
			Tenant: tenant, BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID,
			ClosureOperationID: p.ClosureOperationID, RunAdmissionManifest: p.RunAdmissionManifest(),
			RunExecutionFinalization: mark.RunExecutionFinalization, RunExecutionFinalizationStateVersion: mark.StateVersion,
			AttemptSetManifest: mark.AttemptSetManifest, AttemptCount: mark.AttemptCount,
		}},
		Outcome: receipt.CoordinatorOutcome{State: receipt.CoordinatorWorkScheduled, FinalizationFenceRevision: trig.FenceRevision,
			Work: &receipt.FinalizationWorkBinding{WorkGeneration: work.Generation, TriggerSnapshot: trig.Snapshot, Work: work.Work}},
		CommittedAt: now,
	}
	if err := r.Seal(); err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeReceiptInvariant, fmt.Errorf("seal coordinator receipt: %w", err))
	}
	rq := r.Receipt
	if err := queries.ClosureInsert(ctx, tx, dbsqlc.ClosureInsertParams{
		BillingFinalizationFenceID: fence.BillingFinalizationFenceID, RunID: p.RunID, ClosureEventID: env.EventID,
		ClosureEventEnvelopeDigestAlgorithmVersion: string(mark.EnvelopeDigest.Algorithm), ClosureEventEnvelopeSha256: mark.EnvelopeDigest.Value,
		ClosureOperationID:          p.ClosureOperationID,
		RunExecutionFinalizationRef: p.RunExecutionFinalizationRef, RunExecutionFinalizationSchemaVersion: p.RunExecutionFinalizationSchemaVersion,
		RunExecutionFinalizationDigestAlgorithmVersion: p.RunExecutionFinalizationDigestAlgorithmVersion,
		RunExecutionFinalizationDigest:                 p.RunExecutionFinalizationDigest, RunExecutionFinalizationStateVersion: mark.StateVersion,
		AttemptSetManifestRef: p.AttemptSetManifestRef, AttemptSetManifestSchemaVersion: p.AttemptSetManifestSchemaVersion,
		AttemptSetManifestDigestAlgorithmVersion: p.AttemptSetManifestDigestAlgorithmVersion, AttemptSetManifestDigest: p.AttemptSetManifestDigest,
		AttemptCount: p.AttemptCount, CoordinatorReceiptRef: rq.Ref, CoordinatorReceiptSchemaVersion: rq.SchemaVersion,
		CoordinatorReceiptDigestAlgorithmVersion: string(rq.DigestAlgorithmVersion), CoordinatorReceiptDigest: rq.Digest,
		WorkGeneration: work.Generation, AppliedAt: now,
	}); err != nil {
		return inbox.Outcome{}, fmt.Errorf("insert closure watermark: %w", err)
	}
	if _, err := advanceFence(ctx, tx, fence, trig, work, now); err != nil {
		return inbox.Outcome{}, err
	}
	return inbox.Applied(r), nil
}

// closureMismatch compares the closure event with the reservation Core
// admitted ("" when they agree).
func closureMismatch(p envelope.ExecutionRunFinalizationClosedV1Payload, env *envelope.Envelope, res dbsqlc.ReservationLockRow) string {
	manifest := quad(res.RunAdmissionManifestRef, res.RunAdmissionManifestSchemaVersion,
		res.RunAdmissionManifestDigestAlgorithmVersion, res.RunAdmissionManifestDigest)
	switch {
	case p.BillingReservationID != res.BillingReservationID:
		return "billingReservationId " + p.BillingReservationID
	case p.BillingAccountID != res.BillingAccountID:
		return "billingAccountId " + p.BillingAccountID
	case p.RunAdmissionManifest() != manifest:
		return "runAdmissionManifest " + p.RunAdmissionManifestRef
	case env.TenantKind != res.TenantKind || env.TenantID != res.TenantID || env.WorkspaceID != res.WorkspaceID || env.ProjectID != deref(res.ProjectID):
		return "tenant"
	}
	return ""
}

// applyResolution is the resolution branch (ADR-031; outbox document,
// coordinator paragraphs): the event must be exactly Billing's applied fact
// of its case generation (the one event committed with it). With the fence
// still in that generation, one inbox transaction records the resolution
// watermark, freezes a trigger with every watermark accumulated during the
// case, schedules the new Work generation, leaves the case
// (pending_evaluation) and writes the work_scheduled receipt. A redelivery
// of the event is answered by the inbox with this first receipt, before it
// gets here, so no second Work is ever created; and since the fact names
// its one event, no other event of the generation reaches the fence
// (already_superseded, which the receipt contract allows, never arises).
// Any other fence state is a conflict.
func (c *Coordinator) applyResolution(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env := ev.Envelope
	p, err := envelope.PayloadOf[envelope.BillingFinalizationReconciliationResolutionAppliedV1Payload](env)
	if err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeEnvelopeInvalid, err)
	}
	fence, err := queries.FenceLock(ctx, tx, p.BillingFinalizationFenceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return inbox.Outcome{}, transport.NonRetryable(CodeResolutionConflict, fmt.Errorf("%w: fence %s", ErrFenceNotFound, p.BillingFinalizationFenceID))
	}
	if err != nil {
		return inbox.Outcome{}, fmt.Errorf("lock fence: %w", err)
	}
	stored, err := queries.ResolutionGet(ctx, tx, dbsqlc.ResolutionGetParams{BillingFinalizationFenceID: p.BillingFinalizationFenceID,
		ReconciliationGeneration: p.ReconciliationGeneration})
	if errors.Is(err, pgx.ErrNoRows) {
		// The fact commits with its event; an event without it is not ours.
		return inbox.Outcome{}, transport.NonRetryable(CodeResolutionNotApplied, fmt.Errorf("%w: no resolution of fence %s generation %d",
			ErrResolutionConflict, p.BillingFinalizationFenceID, p.ReconciliationGeneration))
	}
	if err != nil {
		return inbox.Outcome{}, fmt.Errorf("read resolution: %w", err)
	}
	if mismatch := resolutionMismatch(p, env, ev, stored); mismatch != "" {
		return inbox.Outcome{}, transport.NonRetryable(CodeResolutionConflict, fmt.Errorf("%w: %s", ErrResolutionConflict, mismatch))
	}
	r := &receipt.BillingFinalizationCoordinatorConsumerReceipt{
		Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bfcr-" + uuid.Must(uuid.NewV7()).String()},
			EventID: env.EventID, EventEnvelopeDigest: ev.Delivery.EnvelopeDigest},
		Source: receipt.CoordinatorSource{Kind: receipt.CoordinatorSourceResolution, Resolution: &receipt.ResolutionSource{
			Tenant:               receipt.Tenant{Kind: env.TenantKind, ID: env.TenantID, WorkspaceID: env.WorkspaceID, ProjectID: env.ProjectID},
			BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID,
			BillingFinalizationFenceID: p.BillingFinalizationFenceID, ReconciliationCaseRef: p.ReconciliationCaseRef,
			ReconciliationGeneration: p.ReconciliationGeneration, ResolutionRevision: 1, ResolutionOperationID: p.ResolutionOperationID,
			FinalizationCaseIdentityReservation:         quad(p.FinalizationCaseIdentityReservationRef, p.FinalizationCaseIdentityReservationSchemaVersion, p.FinalizationCaseIdentityReservationDigestAlgorithmVersion, p.FinalizationCaseIdentityReservationDigest),
			FinalizationReconciliationResolutionApplied: quad(p.FinalizationReconciliationResolutionAppliedRef, p.FinalizationReconciliationResolutionAppliedSchemaVersion, p.FinalizationReconciliationResolutionAppliedDigestAlgorithmVersion, p.FinalizationReconciliationResolutionAppliedDigest),
			ActorWorkforcePrincipalID:                   p.ActorWorkforcePrincipalID,
		}},
		CommittedAt: ev.Now.UTC(),
	}
	if fence.CoordinationState != FenceReconciliationRequired || fence.ReconciliationGeneration != p.ReconciliationGeneration {
		return inbox.Outcome{}, transport.NonRetryable(CodeResolutionConflict, fmt.Errorf("%w: fence %s is %s at case generation %d, the resolution is for %d",
			ErrResolutionConflict, fence.BillingFinalizationFenceID, fence.CoordinationState, fence.ReconciliationGeneration, p.ReconciliationGeneration))
	}
	now := ev.Now.UTC()
	trig, work, err := nextGeneration(ctx, tx, fence, nil, now)
	if err != nil {
		return inbox.Outcome{}, err
	}
	r.Outcome = receipt.CoordinatorOutcome{State: receipt.CoordinatorWorkScheduled, FinalizationFenceRevision: trig.FenceRevision,
		Work: &receipt.FinalizationWorkBinding{WorkGeneration: work.Generation, TriggerSnapshot: trig.Snapshot, Work: work.Work}}
	if err := r.Seal(); err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeReceiptInvariant, fmt.Errorf("seal coordinator receipt: %w", err))
	}
	if err := queries.ResolutionWatermarkInsert(ctx, tx, dbsqlc.ResolutionWatermarkInsertParams{
		BillingFinalizationFenceID: p.BillingFinalizationFenceID, ReconciliationGeneration: p.ReconciliationGeneration,
		ResolutionEventID: env.EventID, ResolutionEventEnvelopeSha256: ev.Delivery.EnvelopeDigest.Value,
		CoordinatorReceiptRef: r.Receipt.Ref, CoordinatorReceiptDigest: r.Receipt.Digest, WorkGeneration: work.Generation, AppliedAt: now,
	}); err != nil {
		return inbox.Outcome{}, fmt.Errorf("insert resolution watermark: %w", err)
	}
	if _, err := advanceFence(ctx, tx, fence, trig, work, now); err != nil {
		return inbox.Outcome{}, err
	}
	return inbox.Applied(r), nil
}

// resolutionMismatch compares the resolution event with Billing's stored
// applied fact ("" when they agree).
func resolutionMismatch(p envelope.BillingFinalizationReconciliationResolutionAppliedV1Payload, env *envelope.Envelope, ev *inbox.Event,
	stored dbsqlc.BillingFinalizationReconciliationResolution) string {
	applied := quad(stored.AppliedRef, stored.AppliedSchemaVersion, stored.AppliedDigestAlgorithmVersion, stored.AppliedDigest)
	switch {
	case stored.EventID != env.EventID || stored.EventEnvelopeSha256 != ev.Delivery.EnvelopeDigest.Value:
		return "event " + env.EventID + " is not the one committed with the resolution"
	case stored.ResolutionOperationID != p.ResolutionOperationID:
		return "resolutionOperationId " + p.ResolutionOperationID
	case quad(p.FinalizationReconciliationResolutionAppliedRef, p.FinalizationReconciliationResolutionAppliedSchemaVersion,
		p.FinalizationReconciliationResolutionAppliedDigestAlgorithmVersion, p.FinalizationReconciliationResolutionAppliedDigest) != applied:
		return "finalizationReconciliationResolutionApplied " + p.FinalizationReconciliationResolutionAppliedRef
	case stored.ActorWorkforcePrincipalID != p.ActorWorkforcePrincipalID:
		return "actor " + p.ActorWorkforcePrincipalID
	}
	return ""
}
