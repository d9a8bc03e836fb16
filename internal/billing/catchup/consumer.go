package catchup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Delivery error codes of the catch-up consumer (the shared inbox adds its own).
const (
	// Non-retryable: the event itself is wrong.
	CodePairNotConsumed  = "catch_up_pair_not_consumed"
	CodePayloadInvalid   = "catch_up_payload_invalid"
	CodeSameRevisionDiff = "catch_up_same_revision_different_snapshot"
	CodeIdentityConflict = "catch_up_identity_conflict"
	// Retryable: nothing can bind the event yet (the watermark is kept).
	CodeFenceNotBindable = "catch_up_fence_not_bindable"
)

// Errors of the catch-up consumer.
var (
	ErrPairNotConsumed = errors.New("billing: event pair is not consumed by the settlement catch-up")
	// ErrFenceNotBindable: neither a catch-up fence nor a finalization
	// fence can bind the event yet; its watermark is kept and the delivery retried.
	ErrFenceNotBindable = errors.New("billing: no fence can bind the settlement input yet")
)

// Finalization-side answers to a settlement input observed before its
// reservation's successful finalization.
const (
	FinalizationInputWorkScheduled   = "finalization_work_scheduled"
	FinalizationInputHeld            = "held_for_resolution"
	FinalizationInputAlreadyObserved = "already_observed"
	// FinalizationInputNotBindable: nothing can bind the input yet (no
	// fence, or no applied closure); whatever watermark the side kept
	// commits, no receipt, retryable.
	FinalizationInputNotBindable = "not_bindable"
	// FinalizationInputFinalized: the reservation is already finalized; the
	// catch-up fence takes the input.
	FinalizationInputFinalized = "finalized"
)

// ObservedSettlementInput is a settlement input event for a dimension that
// has no catch-up fence yet.
type ObservedSettlementInput struct {
	EventID   string
	Dimension billingc.SettlementDimension
	Input     billingc.SettlementInput
	Now       time.Time
}

// FinalizationInputObservation is the finalization side's answer. For
// work_scheduled, held_for_resolution and already_observed, InboxRevision
// is the dimension watermark's revision; already_observed also carries the
// highest observed input. Exactly the pointer of State is set.
type FinalizationInputObservation struct {
	State         string
	InboxRevision int64
	WorkScheduled *receipt.FinalizationWorkScheduled
	Held          *receipt.HeldForResolution
	Highest       *billingc.SettlementInput
}

// FinalizationInputObserver is the finalization fence's side of a settlement
// input that arrives before the successful finalization (the Billing
// finalization owner implements it; FinalizationFenceObserver adapts
// ApplySettlementInputTx): in the consumer's transaction, lock the
// finalization fence, advance the dimension's watermark monotonically and
// freeze a trigger snapshot with its finalization Work
// (finalization_work_scheduled); while the fence is reconciliation_required
// only advance the watermark (held_for_resolution, no Work); an older input
// is already_observed; not_bindable when nothing can bind it yet; finalized
// when the reservation's success committed (the finalization transaction
// opened the catch-up fences, see OpenFencesTx).
type FinalizationInputObserver interface {
	ObserveSettlementInputTx(ctx context.Context, tx pgx.Tx, in ObservedSettlementInput) (FinalizationInputObservation, error)
}

// ConsumerConfig configures the catch-up consumer.
type ConsumerConfig struct {
	Inbox inbox.Config
	// Finalization is the finalization fence's side (required).
	Finalization FinalizationInputObserver
}

// Consumer consumes billing_settlement_catch_up: every
// metering.settlement-input.current-changed@1 advances the dimension's
// watermark and becomes durable Work (an inbox.Consumer).
type Consumer struct {
	finalization FinalizationInputObserver
	receipts     *inbox.Table
	// Inbox gives Consume (a transport.ConsumerFunc) and ConsumeBatch
	// (several deliveries in one transaction; serve does not wire it: a
	// batch would keep earlier events' locks until its commit, see
	// cli.consumersFor).
	*inbox.Inbox
}

// NewConsumer builds the consumer over the core database.
func NewConsumer(pool db.Beginner, cfg ConsumerConfig) (*Consumer, error) {
	if cfg.Finalization == nil {
		return nil, errors.New("billing: the catch-up consumer needs the finalization observer")
	}
	c := &Consumer{finalization: cfg.Finalization, receipts: inbox.NewTable("billing", "settlement_catch_up_receipts", false)}
	in, err := inbox.New(pool, c, cfg.Inbox)
	if err != nil {
		return nil, err
	}
	c.Inbox = in
	return c, nil
}

// Destination implements inbox.Consumer.
func (c *Consumer) Destination() route.Destination { return route.BillingSettlementCatchUp }

// Receipts implements inbox.Consumer.
func (c *Consumer) Receipts() *inbox.Table { return c.receipts }

// ReceiptKey implements inbox.Consumer: (consumerName, eventId).
func (c *Consumer) ReceiptKey(ev *inbox.Event) (inbox.Key, error) {
	return inbox.Key{ConsumerName: route.BillingSettlementCatchUpConsumer, EventID: ev.Envelope.EventID, Projection: route.NotApplicable}, nil
}

// ApplyTx implements inbox.Consumer: one Billing inbox transaction handles
// the dimension's watermark monotonically and picks the durability branch
// (the finalization fence before the successful finalization, the catch-up
// fence after it); the receipt commits with them (the inbox inserts it).
func (c *Consumer) ApplyTx(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env := ev.Envelope
	if env.EventType != envelope.MeteringSettlementInputCurrentChangedV1 || env.EventSchemaVersion != "1" {
		return inbox.Outcome{}, transport.NonRetryable(CodePairNotConsumed, fmt.Errorf("%w: %s (%s)", ErrPairNotConsumed, env.EventType, env.EventSchemaVersion))
	}
	p, err := envelope.PayloadOf[envelope.MeteringSettlementInputCurrentChangedV1Payload](env)
	if err != nil {
		return inbox.Outcome{}, transport.NonRetryable(CodePayloadInvalid, err)
	}
	dim := billingc.SettlementDimension{BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID,
		RunID: p.RunID, RunStepID: p.RunStepID, ExecutionAttemptID: p.ExecutionAttemptID, ChargeDimensionKey: p.ChargeDimensionKey,
		EconomicIdentity: p.SettlementEconomicIdentity}
	in := billingc.SettlementInput{StateVersion: p.SettlementInputStateVersion, Snapshot: strict.Quadruple{Ref: p.SettlementInputSnapshotRef,
		SchemaVersion: p.SettlementInputSnapshotSchemaVersion, DigestAlgorithmVersion: digest.Algorithm(p.SettlementInputSnapshotDigestAlgorithmVersion),
		Digest: p.SettlementInputSnapshotDigest}}
	r := &receipt.BillingSettlementCatchUpConsumerReceipt{
		Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bscr-" + uuid.Must(uuid.NewV7()).String()},
			EventID: env.EventID, EventEnvelopeDigest: ev.Delivery.EnvelopeDigest},
		Tenant:               receipt.Tenant{Kind: env.TenantKind, ID: env.TenantID, WorkspaceID: env.WorkspaceID, ProjectID: env.ProjectID},
		BillingReservationID: dim.BillingReservationID, BillingAccountID: dim.BillingAccountID, RunID: dim.RunID,
		RunStepID: dim.RunStepID, ExecutionAttemptID: dim.ExecutionAttemptID, ChargeDimensionKey: dim.ChargeDimensionKey,
		EconomicIdentity: receipt.SettlementEconomicIdentity{Kind: p.SettlementEconomicIdentity.Kind, EntitlementKey: p.SettlementEconomicIdentity.EntitlementKey,
			Unit: p.SettlementEconomicIdentity.Unit, Currency: p.SettlementEconomicIdentity.Currency},
		EventSettlementInput: receipt.SettlementInputRef{Snapshot: in.Snapshot, StateVersion: in.StateVersion},
		CommittedAt:          ev.Now,
	}

	// Before the successful finalization the finalization fence owns the
	// input. Lock order: the finalization fence (locked by the observer)
	// before the dimension lock, as in the finalization's own transaction,
	// which opens the catch-up fence under both.
	opened, err := catchUpFenceExists(ctx, tx, dim.SettlementDimensionID())
	if err != nil {
		return inbox.Outcome{}, err
	}
	if !opened {
		obs, err := c.finalization.ObserveSettlementInputTx(ctx, tx, ObservedSettlementInput{EventID: env.EventID, Dimension: dim, Input: in, Now: ev.Now})
		if err != nil {
			return inbox.Outcome{}, err
		}
		if obs.State != FinalizationInputFinalized {
			return finalizationOutcome(r, obs)
		}
	}

	// After it, the catch-up fence: the dimension lock, then the watermark
	// (advance, re-bind the same advance, or already_observed).
	if err := lockCatchUpDimension(ctx, tx, dim.SettlementDimensionID()); err != nil {
		return inbox.Outcome{}, err
	}
	inboxRevision, observed, err := AdvanceWatermarkTx(ctx, tx, env.EventID, dim, in, ev.Now)
	if err != nil {
		return inbox.Outcome{}, err
	}
	if observed != nil {
		r.Outcome = receipt.CatchUpOutcome{Kind: receipt.CatchUpAlreadyObserved, InboxRevision: inboxRevision,
			HighestObserved: &receipt.SettlementInputRef{Snapshot: observed.Snapshot, StateVersion: observed.StateVersion}}
		return sealCatchUpReceipt(r)
	}
	f, err := selectCatchUpFence(ctx, tx, dim.SettlementDimensionID())
	if errors.Is(err, errCatchUpNoFence) {
		// Finalized without a catch-up fence for this dimension: the
		// finalization did not open it (a dimension outside its manifest).
		return inbox.Outcome{}, transport.NonRetryable(CodeIdentityConflict, fmt.Errorf("%w: reservation %s is finalized without a catch-up fence for %s",
			ErrConflict, dim.BillingReservationID, dim.SettlementDimensionID()))
	}
	if err != nil {
		return inbox.Outcome{}, err
	}
	durability, err := reopenCatchUpFence(ctx, tx, f, dim, in, ev.Now)
	if err != nil {
		return inbox.Outcome{}, err
	}
	r.Outcome = receipt.CatchUpOutcome{Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: inboxRevision, Durability: durability}
	return sealCatchUpReceipt(r)
}

// finalizationOutcome turns the finalization side's answer into the receipt
// (or the wait).
func finalizationOutcome(r *receipt.BillingSettlementCatchUpConsumerReceipt, obs FinalizationInputObservation) (inbox.Outcome, error) {
	switch {
	case obs.State == FinalizationInputWorkScheduled && obs.WorkScheduled != nil && obs.Held == nil && obs.Highest == nil:
		r.Outcome = receipt.CatchUpOutcome{Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: obs.InboxRevision,
			Durability: &receipt.CatchUpDurability{State: receipt.DurabilityFinalizationWorkScheduled, FinalizationWork: obs.WorkScheduled}}
	case obs.State == FinalizationInputHeld && obs.Held != nil && obs.WorkScheduled == nil && obs.Highest == nil:
		r.Outcome = receipt.CatchUpOutcome{Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: obs.InboxRevision,
			Durability: &receipt.CatchUpDurability{State: receipt.DurabilityHeldForResolution, HeldForResolution: obs.Held}}
	case obs.State == FinalizationInputAlreadyObserved && obs.Highest != nil && obs.WorkScheduled == nil && obs.Held == nil:
		r.Outcome = receipt.CatchUpOutcome{Kind: receipt.CatchUpAlreadyObserved, InboxRevision: obs.InboxRevision,
			HighestObserved: &receipt.SettlementInputRef{Snapshot: obs.Highest.Snapshot, StateVersion: obs.Highest.StateVersion}}
	case obs.State == FinalizationInputNotBindable:
		return inbox.Wait(CodeFenceNotBindable, ErrFenceNotBindable), nil
	default:
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeReceiptInvariant, fmt.Errorf("%w: finalization observation %q is not whole", ErrConflict, obs.State))
	}
	return sealCatchUpReceipt(r)
}

func sealCatchUpReceipt(r *receipt.BillingSettlementCatchUpConsumerReceipt) (inbox.Outcome, error) {
	if err := r.Seal(); err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeReceiptInvariant, fmt.Errorf("seal catch-up receipt: %w", err))
	}
	return inbox.Applied(r), nil
}

// AdvanceWatermarkTx applies a settlement input event to the
// dimension's watermark (billing.settlement_input_watermarks), under the
// caller's locks. It returns the inbox revision the receipt binds and, for
// an event below the watermark, the highest observed input (already_observed). The same state
// version with the same snapshot re-binds the current advance: only a
// delivery of this very event that waited can get there, because another
// event of the same revision would be Metering writing the revision twice.
func AdvanceWatermarkTx(ctx context.Context, tx pgx.Tx, eventID string, dim billingc.SettlementDimension, in billingc.SettlementInput, now time.Time) (int64, *billingc.SettlementInput, error) {
	identity, err := jcs.Marshal(dim.EconomicIdentity.Map())
	if err != nil {
		return 0, nil, transport.NonRetryable(CodePayloadInvalid, err)
	}
	s, dimID := in.Snapshot, dim.SettlementDimensionID()
	args := pgx.NamedArgs{"settlement_dimension_id": dimID, "billing_reservation_id": dim.BillingReservationID,
		"run_id": dim.RunID, "run_step_id": dim.RunStepID, "execution_attempt_id": dim.ExecutionAttemptID,
		"charge_dimension_key": dim.ChargeDimensionKey, "settlement_economic_identity": string(identity), "snapshot_ref": s.Ref,
		"snapshot_schema_version": s.SchemaVersion, "snapshot_digest_algorithm_version": string(s.DigestAlgorithmVersion),
		"snapshot_digest": s.Digest, "state_version": in.StateVersion, "event_id": eventID, "now": now}
	wm, err := selectCatchUpWatermark(ctx, tx, dim.BillingReservationID, dimID)
	switch {
	case errors.Is(err, errCatchUpNoWatermark):
		if _, err := tx.Exec(ctx, qCatchUpWatermarkInsert, args); err != nil {
			return 0, nil, fmt.Errorf("insert watermark: %w", err)
		}
		return 1, nil, nil
	case err != nil:
		return 0, nil, err
	}
	highest := wm.input()
	switch {
	case in.StateVersion < highest.StateVersion:
		return wm.InboxRevision, &highest, nil
	// guard BI-3.watermark-same-version-other-snapshot
	case in.StateVersion == highest.StateVersion && in.Snapshot != highest.Snapshot:
		return 0, nil, transport.NonRetryable(CodeSameRevisionDiff, fmt.Errorf("%w: state version %d is %s, event carries %s",
			receipt.ErrSameRevisionDifferentSnapshot, in.StateVersion, highest.Snapshot.Ref, in.Snapshot.Ref))
	case in.StateVersion == highest.StateVersion:
		return wm.InboxRevision, nil, nil
	}
	rows, err := tx.Query(ctx, qCatchUpWatermarkAdvance, args)
	if err != nil {
		return 0, nil, fmt.Errorf("advance watermark: %w", err)
	}
	rev, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, nil, fmt.Errorf("advance watermark: %w", err)
	}
	return rev, nil, nil
}

// reopenCatchUpFence binds the event to the catch-up fence: when the
// active generation already covers the input (evaluated, or a pending
// verification of it or a newer one) the receipt binds that generation;
// otherwise the fence moves one revision with a new generation that
// verifies the event's input (settlement_input_observed).
func reopenCatchUpFence(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, dim billingc.SettlementDimension, in billingc.SettlementInput, now time.Time) (*receipt.CatchUpDurability, error) {
	stored, err := f.dimension()
	if err != nil {
		return nil, err
	}
	if stored != dim {
		return nil, transport.NonRetryable(CodeIdentityConflict, fmt.Errorf("%w: event dimension %+v, fence %+v", ErrConflict, dim, stored))
	}
	last := f.lastEvaluated()
	// guard BI-3.evaluated-same-version-other-snapshot
	if in.StateVersion == last.StateVersion && in.Snapshot != last.Snapshot {
		return nil, transport.NonRetryable(CodeSameRevisionDiff, fmt.Errorf("%w: state version %d was evaluated as %s, event carries %s",
			receipt.ErrSameRevisionDifferentSnapshot, in.StateVersion, last.Snapshot.Ref, in.Snapshot.Ref))
	}
	// The active Work stands for the event when the fence already evaluated
	// this input (the first Work verified Metering's current one before the
	// event arrived) or its pending generation verifies it or a newer one.
	w, err := selectCatchUpWork(ctx, tx, f.SettlementDimensionID, f.ActiveWorkGeneration)
	if err != nil {
		return nil, err
	}
	covered := in.StateVersion <= last.StateVersion ||
		(f.CoordinationState == billingc.CatchUpPendingVerification && w.Basis.InputToVerify.StateVersion >= in.StateVersion)
	if !covered {
		w = nil
	}
	fenceRevision := f.FenceRevision
	if w == nil {
		basis := billingc.CatchUpBasis{SettlementDimensionID: f.SettlementDimensionID, SettlementCatchUpFenceRevision: f.FenceRevision + 1,
			WorkGeneration: f.ActiveWorkGeneration + 1, SettlementStateRevision: f.SettlementStateRevision,
			LastEvaluatedInput: f.lastEvaluated(), InputToVerify: in}
		if w, err = insertCatchUpWork(ctx, tx, dim, basis, billingc.CatchUpCauseSettlementInput, now); err != nil {
			return nil, err
		}
		c := f.change()
		c.State, c.Generation = billingc.CatchUpPendingVerification, basis.WorkGeneration
		if fenceRevision, err = updateCatchUpFence(ctx, tx, f, c, now); err != nil {
			return nil, err
		}
	}
	return &receipt.CatchUpDurability{State: receipt.DurabilitySettlementCatchUpScheduled, SettlementCatchUp: &receipt.SettlementCatchUpScheduled{
		SettlementCatchUpFenceRevision: fenceRevision, WorkGeneration: w.Basis.WorkGeneration, Work: w.Work,
		BillingCatchUpValidationOperationID: w.ValidationOperationID(),
	}}, nil
}
