package catchup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/work"
)

// Validation purposes the catch-up worker asks the Metering owner for.
const (
	PurposeBillingCatchUpFence        = billingc.PurposeBillingCatchUpFence
	PurposePostFinalizationTransition = "post_finalization_transition"
)

// ValidationRequest asks the Metering owner whether Input is the
// current settlement input of the dimension, bound to a purpose and an
// operation (validateSettlementInputCurrent).
type ValidationRequest struct {
	Purpose               string
	OperationID           string
	SettlementDimensionID string
	Input                 billingc.SettlementInput
	// BasisDigest is what the validation serves: the Work's catch-up basis
	// digest, or the transition's settlement basis digest.
	BasisDigest digest.Digest
}

// Validation is Metering's answer: current with its receipt, or
// not_current with the current five-tuple.
type Validation struct {
	Current      bool
	Receipt      strict.Quadruple
	CurrentInput billingc.SettlementInput
}

// ErrSettlementInputNotSettleable: the newer input is not settleable yet
// (awaiting evidence, or reconciliation required): no transition is
// derived from it; the Work stays pending and is verified again.
var ErrSettlementInputNotSettleable = errors.New("billing: settlement input is not settleable")

// Metering is what the catch-up worker needs from the Metering owner
// (package catchupmetering adapts the Metering owner in process).
type Metering interface {
	// ValidateSettlementInputCurrent is Metering's operation-bound current
	// validation (the same operation answers the same receipt).
	ValidateSettlementInputCurrent(ctx context.Context, req ValidationRequest) (Validation, error)
	// SettlementInputTarget reads the target net amount of one exact
	// settlement input (its lineage), verified against the five-tuple.
	SettlementInputTarget(ctx context.Context, settlementDimensionID string, in billingc.SettlementInput) (string, error)
}

// Ledger writes the ledger postings of a transition that moves money
// (refund, adjustment) in the transition's transaction (the Billing ledger
// implements it). An exposure never posts.
type Ledger interface {
	PostSettlementTransitionTx(ctx context.Context, tx pgx.Tx, t *billingc.BillingSettlementTransition) error
}

// WorkerConfig configures the catch-up worker.
type WorkerConfig struct {
	Metering Metering
	Ledger   Ledger
	// Cases is Operations' late settlement case identity primitive: an
	// exposure asks for its dimension's case (issue 32). Nil records
	// exposures not_requested (visible, blocked, with no case).
	Cases operationsread.LateCaseIdentities
	// Batch is how many pending fences one RunOnce pass claims (default 32).
	Batch int
	// Concurrency is how many attempts Run runs at once (default 1).
	Concurrency int
	// Metrics receives the Work metrics of queue billing_settlement_catch_up
	// (nil: unregistered ones).
	Metrics *work.Metrics
	// Counters counts the transitions this worker commits (nil: none).
	Counters *billing.Counters
	// Now is the clock of committed facts (default time.Now, UTC).
	Now func() time.Time
	// Idle is how long a Run slot waits after an attempt that made no
	// progress or found nothing (default 100ms).
	Idle time.Duration
	// Lease is how long a claimed attempt holds its Work generation before
	// another worker may reclaim it with a new fencing token (default 30s).
	Lease time.Duration
	// BlockedBackoff is the first wait after an owner conflict blocked a
	// Work generation; it doubles per block of the generation, up to 5 minutes (default 1s).
	BlockedBackoff time.Duration
	Log            *slog.Logger
}

// Worker verifies pending catch-up Work and commits transitions.
type Worker struct {
	pool   db.Beginner
	cfg    WorkerConfig
	claims *work.Store // any dimension
	one    *work.Store // one dimension (Step)
	runner *work.Runner
	mu     sync.Mutex
	steps  map[string]int64
}

// Results of one Work step.
const (
	StepCaughtUp          = "caught_up"
	StepTransition        = "transition_applied"
	StepAlreadyEvaluated  = "already_evaluated"
	StepSuperseded        = "superseded"
	StepValidationChanged = "validation_changed"
	// StepNotSettleable: the newer input awaits evidence or needs
	// reconciliation; nothing is written and the Work is verified again.
	StepNotSettleable = "input_not_settleable"
)

// NewWorker builds the worker over the core database.
func NewWorker(pool db.Beginner, cfg WorkerConfig) (*Worker, error) {
	if cfg.Metering == nil || cfg.Ledger == nil {
		return nil, errors.New("billing: the catch-up worker needs Metering reads and the ledger")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 32
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 100 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = defaultCatchUpLease
	}
	if cfg.BlockedBackoff <= 0 {
		cfg.BlockedBackoff = defaultCatchUpBlockedBackoff
	}
	w := &Worker{pool: pool, cfg: cfg, steps: map[string]int64{}}
	w.claims, w.one = catchUpStores(pool, cfg.Now)
	w.runner = work.NewRunner[catchUpAttempt](&queue{w: w, store: w.claims}, work.Config{Name: QueueName,
		Slots: cfg.Concurrency, Lease: cfg.Lease, Idle: cfg.Idle, Drain: cfg.Lease, Metrics: cfg.Metrics,
		Outcomes: []string{StepCaughtUp, StepTransition, StepAlreadyEvaluated}, Log: cfg.Log})
	return w, nil
}

// Stats returns how many steps of each outcome the worker took so far.
func (w *Worker) Stats() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int64, len(w.steps))
	for k, v := range w.steps {
		out[k] = v
	}
	return out
}

// Run runs the worker's Runner until ctx ends: each slot claims one
// claimable Work generation (pending, blocked past its backoff, or with an
// expired lease) as a new attempt and steps it; in-flight attempts finish
// first.
func (w *Worker) Run(ctx context.Context) { w.runner.Run(ctx) }

// RunOnce claims one batch of claimable Work generations, one attempt each,
// and steps each once; it returns the steps taken by outcome and the first
// failure (one dimension's failure does not hold the others back; it is
// verified again next pass).
func (w *Worker) RunOnce(ctx context.Context) (map[string]int, error) {
	results, err := w.runner.Pass(ctx, w.cfg.Batch)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var firstErr error
	for _, r := range results {
		switch r.Kind {
		case work.Failed:
			firstErr = cmp.Or(firstErr, r.Err)
		case work.Fenced:
			out[StepFencedOut]++ // the database refused our token, or our lease was lost
		default:
			out[r.Outcome]++
		}
	}
	return out, firstErr
}

// catchUpClaim is what one step read: the fence revision and generation it
// works on (the compare-and-set of the commit) and the Work.
type catchUpClaim struct {
	fence   *catchUpFenceRow
	work    *billingc.BillingSettlementCatchUpWork
	attempt catchUpAttempt
}

// Step advances one dimension's active Work by one step: verify the Work's
// input with Metering (purpose billing_catch_up_fence); if it is current and
// already evaluated, the fence is caught_up; otherwise the newer current
// input is validated for post_finalization_transition and one transition
// (or, for no difference, a rebaseline) commits with the successor Work.
// A fence that moved meanwhile (a newer event, another worker) makes the
// step superseded: nothing is written, the new generation is next.
// Step claims the dimension's Work as a new attempt first; a generation
// another worker holds under a live lease (or caught up) is superseded.
func (w *Worker) Step(ctx context.Context, dimID string) (string, error) {
	r := work.NewRunner[catchUpAttempt](&queue{w: w, store: w.one, dimension: dimID}, work.Config{Name: QueueName,
		Lease: w.cfg.Lease, Log: w.cfg.Log})
	results, err := r.Pass(ctx, 1)
	switch {
	case err != nil:
		return "", err
	case len(results) == 0:
		return StepSuperseded, nil
	case results[0].Kind == work.Failed:
		return "", results[0].Err
	}
	return results[0].Outcome, nil
}

func (w *Worker) step(ctx context.Context, a catchUpAttempt) (string, error) {
	dimID := a.DimensionID
	claim, err := db.WithTxV(ctx, w.pool, func(ctx context.Context, tx pgx.Tx) (*catchUpClaim, error) {
		f, err := selectCatchUpFence(ctx, tx, dimID)
		if err != nil {
			return nil, err
		}
		if !claimableCatchUpState(f.CoordinationState) || f.ActiveWorkGeneration != a.WorkGeneration {
			return nil, nil
		}
		work, err := selectCatchUpWork(ctx, tx, dimID, f.ActiveWorkGeneration)
		if err != nil {
			return nil, err
		}
		return &catchUpClaim{fence: f, work: work, attempt: a}, nil
	})
	if err != nil {
		return "", fmt.Errorf("catch-up step %s: %w", dimID, err)
	}
	if claim == nil {
		return StepSuperseded, nil
	}
	basis := claim.work.Basis
	v, err := w.cfg.Metering.ValidateSettlementInputCurrent(ctx, ValidationRequest{Purpose: PurposeBillingCatchUpFence,
		OperationID: claim.work.ValidationOperationID(), SettlementDimensionID: dimID, Input: basis.InputToVerify, BasisDigest: basis.Digest()})
	if err != nil {
		return "", ownerConflict(claim, fmt.Errorf("catch-up step %s: validate: %w", dimID, err))
	}
	target := basis.InputToVerify
	if !v.Current {
		target = v.CurrentInput
	}
	last := claim.fence.lastEvaluated()
	if target.StateVersion == last.StateVersion && target.Snapshot == last.Snapshot {
		if !v.Current {
			// Metering went back to the evaluated input after a newer one:
			// never caught up on another operation's receipt; a new Work
			// generation verifies it.
			return w.rebaseline(ctx, claim, target, v.Receipt)
		}
		return w.caughtUp(ctx, claim, v.Receipt)
	}
	if target.StateVersion < last.StateVersion {
		return "", fmt.Errorf("catch-up step %s: %w: Metering's current state version %d is behind the settled %d",
			dimID, ErrConflict, target.StateVersion, last.StateVersion)
	}
	return w.transition(ctx, claim, target, v.Receipt)
}

// caughtUp marks the fence caught_up on the generation's own receipt, if
// nothing moved: same revision and generation, watermark not ahead (the
// fence guard BC004 refuses it otherwise).
func (w *Worker) caughtUp(ctx context.Context, claim *catchUpClaim, receiptQuad strict.Quadruple) (string, error) {
	now := w.cfg.Now()
	return db.WithTxV(ctx, w.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
		f, moved, err := w.relock(ctx, tx, claim)
		if err != nil || moved {
			return StepSuperseded, err
		}
		wm, err := selectCatchUpWatermark(ctx, tx, f.BillingReservationID, f.SettlementDimensionID)
		switch {
		case err == nil && wm.StateVersion > f.LastEvaluatedStateVersion:
			// A newer event is on its way into this fence: its consumer
			// transaction will reopen it; never claim caught up.
			return StepSuperseded, nil
		case err != nil && !errors.Is(err, errCatchUpNoWatermark):
			return "", err
		}
		c := f.change()
		c.State, c.CaughtUpReceipt, c.AttemptToken = billingc.CatchUpCaughtUp, receiptQuad, claim.attempt.FencingToken
		if _, err := updateCatchUpFence(ctx, tx, f, c, now); err != nil {
			return "", err
		}
		if err := insertCatchUpFinish(ctx, tx, f, claim.work, claim.attempt, receiptQuad, billingc.CatchUpFinishedCaughtUp, nil, nil, now); err != nil {
			return "", err
		}
		return StepCaughtUp, nil
	})
}

// relock locks the fence again and reports whether it moved since the claim.
func (w *Worker) relock(ctx context.Context, tx pgx.Tx, claim *catchUpClaim) (*catchUpFenceRow, bool, error) {
	if err := lockCatchUpDimension(ctx, tx, claim.fence.SettlementDimensionID); err != nil {
		return nil, false, err
	}
	f, err := selectCatchUpFence(ctx, tx, claim.fence.SettlementDimensionID)
	if err != nil {
		return nil, false, err
	}
	moved := f.FenceRevision != claim.fence.FenceRevision || f.ActiveWorkGeneration != claim.fence.ActiveWorkGeneration ||
		!claimableCatchUpState(f.CoordinationState)
	return f, moved, nil
}

// transitionBasis is the full basis a transition is derived from; its
// digest and the Work's operation derive the validation operation, so a
// stale validation (another from revision, another input) is never reused.
func transitionBasis(f *catchUpFenceRow, work *billingc.BillingSettlementCatchUpWork, target billingc.SettlementInput) digest.Digest {
	d, err := digest.Of(digest.JCSSHA256V1, map[string]any{
		"settlementDimensionId":       f.SettlementDimensionID,
		"fromSettlementStateRevision": f.SettlementStateRevision,
		"settledAmountBefore":         f.SettledAmount,
		"previousSettlementInput":     map[string]any{"ref": f.LastEvaluatedRef, "digest": f.LastEvaluatedDigest, "stateVersion": f.LastEvaluatedStateVersion},
		"settlementInput":             map[string]any{"ref": target.Snapshot.Ref, "digest": target.Snapshot.Digest, "stateVersion": target.StateVersion},
		"workRef":                     work.Work.Ref,
		"workDigest":                  work.Work.Digest,
	})
	if err != nil {
		panic("billing: transition basis digest: " + err.Error()) // only programming errors
	}
	return d
}

// transition validates the newer input for post_finalization_transition and
// commits one transition (or a rebaseline for no difference) with the
// successor Work.
func (w *Worker) transition(ctx context.Context, claim *catchUpClaim, target billingc.SettlementInput, catchUpReceipt strict.Quadruple) (string, error) {
	f, work := claim.fence, claim.work
	dimID := f.SettlementDimensionID
	targetAmount, err := w.cfg.Metering.SettlementInputTarget(ctx, dimID, target)
	if errors.Is(err, ErrSettlementInputNotSettleable) {
		return StepNotSettleable, nil
	}
	if err != nil {
		return "", ownerConflict(claim, fmt.Errorf("catch-up step %s: read settlement input v%d: %w", dimID, target.StateVersion, err))
	}
	kind, amount, changes, err := billingc.TransitionKindFor(f.SettledAmount, targetAmount)
	if err != nil {
		return "", fmt.Errorf("catch-up step %s: %w", dimID, err)
	}
	if !changes {
		return w.rebaseline(ctx, claim, target, catchUpReceipt)
	}
	dim, err := f.dimension()
	if err != nil {
		return "", err
	}
	logicalOp := work.ValidationOperationID()
	basis := transitionBasis(f, work, target)
	t := &billingc.BillingSettlementTransition{
		Transition: strict.Quadruple{Ref: "bst-" + uuid.Must(uuid.NewV7()).String()}, Dimension: dim, TransitionKind: kind,
		FromSettlementStateRevision: f.SettlementStateRevision, SettledAmountBefore: f.SettledAmount, TargetAmount: targetAmount,
		TransitionAmount: amount, PreviousSettlementInput: f.lastEvaluated(), SettlementInput: target,
		LogicalOperationID: logicalOp, SettlementBasis: basis,
	}
	t.SettledAmountAfter = targetAmount
	if kind == billingc.TransitionLateSettlementExposure {
		t.SettledAmountAfter = f.SettledAmount // never charged (reconcile_before_charge)
	}
	v, err := w.cfg.Metering.ValidateSettlementInputCurrent(ctx, ValidationRequest{Purpose: PurposePostFinalizationTransition,
		OperationID: t.ValidationOperationID(), SettlementDimensionID: dimID, Input: target, BasisDigest: basis})
	if err != nil {
		return "", ownerConflict(claim, fmt.Errorf("catch-up step %s: validate transition: %w", dimID, err))
	}
	if !v.Current {
		// A newer input arrived between the two validations: nothing is
		// written; the next step verifies again with a new basis (and so a
		// new validation operation).
		return StepValidationChanged, nil
	}
	t.ValidationReceipt = v.Receipt
	if f.SettlementStateRevision == 1 {
		t.CausationKind, t.CausedBy = billingc.TransitionCausedByFinalization, f.finalizationCommitted()
	} else {
		t.CausationKind = billingc.TransitionCausedByTransition
	}
	now := w.cfg.Now()
	out, err := db.WithTxV(ctx, w.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
		cur, moved, err := w.relock(ctx, tx, claim)
		if err != nil || moved {
			return StepSuperseded, err
		}
		if t.CausationKind != billingc.TransitionCausedByFinalization {
			if t.CausationKind, t.CausedBy, err = selectPredecessorStep(ctx, tx, dimID, cur.SettlementStateRevision); err != nil {
				return "", err
			}
		}
		t.CommittedAt = now
		if err := commitCatchUpTransition(ctx, tx, cur, work, claim.attempt, t, w.cfg.Ledger, w.cfg.Cases, catchUpReceipt); err != nil {
			return "", err
		}
		return StepTransition, nil
	})
	if err == nil && out == StepTransition {
		w.cfg.Counters.TransitionCommitted(kind)
	}
	return out, err
}

// rebaseline moves the fence's evaluated input to target without a
// transition (no difference) and creates the successor Work.
func (w *Worker) rebaseline(ctx context.Context, claim *catchUpClaim, target billingc.SettlementInput, catchUpReceipt strict.Quadruple) (string, error) {
	now := w.cfg.Now()
	return db.WithTxV(ctx, w.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
		f, moved, err := w.relock(ctx, tx, claim)
		if err != nil || moved {
			return StepSuperseded, err
		}
		c := f.change()
		c.LastEvaluated, c.AttemptToken = target, claim.attempt.FencingToken
		successor, err := successorCatchUpWork(ctx, tx, f, &c, now)
		if err != nil {
			return "", err
		}
		if _, err := updateCatchUpFence(ctx, tx, f, c, now); err != nil {
			return "", err
		}
		if err := insertCatchUpFinish(ctx, tx, f, claim.work, claim.attempt, catchUpReceipt, billingc.CatchUpFinishedAlreadyEvaluated, nil, successor, now); err != nil {
			return "", err
		}
		return StepAlreadyEvaluated, nil
	})
}

// successorCatchUpWork creates the next generation for the change c (its
// state revision and evaluated input already set): it verifies the highest
// input observed, or the evaluated one.
func successorCatchUpWork(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, c *catchUpFenceChange, now time.Time) (*billingc.BillingSettlementCatchUpWork, error) {
	dim, err := f.dimension()
	if err != nil {
		return nil, err
	}
	toVerify := c.LastEvaluated
	wm, err := selectCatchUpWatermark(ctx, tx, f.BillingReservationID, f.SettlementDimensionID)
	switch {
	case err == nil && wm.StateVersion > toVerify.StateVersion:
		toVerify = wm.input()
	case err != nil && !errors.Is(err, errCatchUpNoWatermark):
		return nil, err
	}
	basis := billingc.CatchUpBasis{SettlementDimensionID: f.SettlementDimensionID, SettlementCatchUpFenceRevision: f.FenceRevision + 1,
		WorkGeneration: f.ActiveWorkGeneration + 1, SettlementStateRevision: c.StateRevision, LastEvaluatedInput: c.LastEvaluated,
		InputToVerify: toVerify}
	w, err := insertCatchUpWork(ctx, tx, dim, basis, billingc.CatchUpCauseSuccessor, now)
	if err != nil {
		return nil, err
	}
	c.State, c.Generation, c.CaughtUpReceipt = billingc.CatchUpPendingVerification, basis.WorkGeneration, strict.Quadruple{}
	return w, nil
}

// insertCatchUpFinish seals and inserts the one finish of work (with its
// successor, and the transition it committed).
func insertCatchUpFinish(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, work *billingc.BillingSettlementCatchUpWork, a catchUpAttempt, catchUpReceipt strict.Quadruple,
	outcome string, t *billingc.BillingSettlementTransition, successor *billingc.BillingSettlementCatchUpWork, now time.Time) error {
	fin := &billingc.BillingSettlementCatchUpWorkAttemptFinished{
		Finished: strict.Quadruple{Ref: "bscwf-" + uuid.Must(uuid.NewV7()).String()}, Dimension: work.Dimension, Work: work.Work,
		WorkGeneration: work.Basis.WorkGeneration, ValidationOperationID: work.ValidationOperationID(), ValidationReceipt: catchUpReceipt,
		Outcome: outcome, FinishedAt: now,
	}
	args := pgx.NamedArgs{"settlement_dimension_id": f.SettlementDimensionID, "work_generation": work.Basis.WorkGeneration,
		"outcome": outcome, "successor_generation": nil, "transition_to_revision": nil, "finished_at": now,
		"attempt_number": a.AttemptNumber, "fencing_token": a.FencingToken}
	if successor != nil {
		fin.RebaselinedInput, fin.SuccessorWork = successor.Basis.LastEvaluatedInput, successor.Work
		fin.SuccessorWorkGeneration, fin.SuccessorValidationOperationID = successor.Basis.WorkGeneration, successor.ValidationOperationID()
		args["successor_generation"] = successor.Basis.WorkGeneration
	}
	if t != nil {
		fin.Transition, fin.ToSettlementStateRevision = t.Transition, t.ToSettlementStateRevision()
		args["transition_to_revision"] = t.ToSettlementStateRevision()
	}
	body, err := billingc.SealSettlement(fin)
	if err != nil {
		return fmt.Errorf("seal catch-up finish: %w", err)
	}
	q := fin.Finished
	args["finished_ref"], args["finished_schema_version"] = q.Ref, q.SchemaVersion
	args["finished_digest_algorithm_version"], args["finished_digest"] = string(q.DigestAlgorithmVersion), q.Digest
	args["finished_body"] = string(body)
	if _, err := tx.Exec(ctx, qCatchUpFinishInsert, args); err != nil {
		return fmt.Errorf("insert catch-up finish: %w", err)
	}
	return nil
}

// commitCatchUpTransition writes, in tx, the transition, its exposure or
// ledger postings, billing.settlement-transition.committed@1 with its
// deliveries, the successor Work and the fence's next revision.
func commitCatchUpTransition(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, work *billingc.BillingSettlementCatchUpWork, a catchUpAttempt, t *billingc.BillingSettlementTransition, ledger Ledger, cases operationsread.LateCaseIdentities, catchUpReceipt strict.Quadruple) error {
	body, err := billingc.SealSettlement(t)
	if err != nil {
		return fmt.Errorf("seal settlement transition: %w", err)
	}
	eventID := uuid.Must(uuid.NewV7()).String()
	event, err := envelope.Build(transitionEvent(f, t, eventID))
	if err != nil {
		return fmt.Errorf("build settlement transition event: %w", err)
	}
	eventDigest, err := event.Digest()
	if err != nil {
		return fmt.Errorf("digest settlement transition event: %w", err)
	}
	q := t.Transition
	if _, err := tx.Exec(ctx, qCatchUpTransitionInsert, pgx.NamedArgs{
		"settlement_dimension_id": f.SettlementDimensionID, "from_settlement_state_revision": t.FromSettlementStateRevision,
		"to_settlement_state_revision": t.ToSettlementStateRevision(), "billing_reservation_id": f.BillingReservationID,
		"billing_account_id": f.BillingAccountID, "transition_ref": q.Ref, "transition_schema_version": q.SchemaVersion,
		"transition_digest_algorithm_version": string(q.DigestAlgorithmVersion), "transition_digest": q.Digest,
		"transition_kind": t.TransitionKind, "settled_amount_before": t.SettledAmountBefore, "settled_amount_after": t.SettledAmountAfter,
		"transition_amount": t.TransitionAmount, "settlement_input_state_version": t.SettlementInput.StateVersion,
		"validation_operation_id": t.ValidationOperationID(), "work_generation": work.Basis.WorkGeneration, "event_id": eventID,
		"event_envelope_sha256": eventDigest.Value, "transition_body": string(body), "committed_at": t.CommittedAt,
	}); err != nil {
		return fmt.Errorf("insert settlement transition: %w", err)
	}
	if err := resolveExposuresByTransition(ctx, tx, f, t, eventID); err != nil {
		return err
	}
	switch t.TransitionKind {
	case billingc.TransitionLateSettlementExposure:
		if err := insertLateSettlementExposure(ctx, tx, f, t, cases, eventID); err != nil {
			return err
		}
	default:
		if err := ledger.PostSettlementTransitionTx(ctx, tx, t); err != nil {
			return fmt.Errorf("post settlement transition: %w", err)
		}
	}
	if _, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, *event); err != nil {
		return fmt.Errorf("append settlement transition event: %w", err)
	}
	c := f.change()
	c.StateRevision, c.SettledAmount, c.LastEvaluated, c.LastEventID = t.ToSettlementStateRevision(), t.SettledAmountAfter, t.SettlementInput, eventID
	c.AttemptToken = a.FencingToken
	successor, err := successorCatchUpWork(ctx, tx, f, &c, t.CommittedAt)
	if err != nil {
		return err
	}
	if _, err := updateCatchUpFence(ctx, tx, f, c, t.CommittedAt); err != nil {
		return err
	}
	return insertCatchUpFinish(ctx, tx, f, work, a, catchUpReceipt, billingc.CatchUpFinishedTransitionApplied, t, successor, t.CommittedAt)
}

// transitionEvent is billing.settlement-transition.committed@1: aggregate
// the dimension at the from revision, caused by the finalization's event or
// the previous transition's.
func transitionEvent(f *catchUpFenceRow, t *billingc.BillingSettlementTransition, eventID string) envelope.Envelope {
	d := t.Dimension
	p := envelope.BillingSettlementTransitionCommittedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, TransitionKind: t.TransitionKind, TransitionAmount: t.TransitionAmount,
		FromSettlementStateRevision: t.FromSettlementStateRevision, ToSettlementStateRevision: t.ToSettlementStateRevision(),
		LogicalOperationID: t.LogicalOperationID, SettlementBasisDigestAlgorithmVersion: string(t.SettlementBasis.Algorithm),
		SettlementBasisDigest: t.SettlementBasis.Value, ValidationOperationID: t.ValidationOperationID(),
	}
	p.SetBillingSettlementTransition(t.Transition)
	tenant := f.tenant()
	return envelope.Envelope{
		EventID: eventID, EventType: envelope.BillingSettlementTransitionCommittedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateBillingSettlementDimension, AggregateID: d.SettlementDimensionID(),
		AggregateRevision: t.FromSettlementStateRevision, TenantKind: tenant.Kind, TenantID: tenant.ID, WorkspaceID: tenant.WorkspaceID,
		ProjectID: tenant.ProjectID, CorrelationID: f.CorrelationID, CausationID: f.LastEventID, OperationID: t.LogicalOperationID,
		OccurredAt: t.CommittedAt, Payload: p.Map(),
	}
}

// claimableCatchUpState: a Work generation is worked on while its fence
// waits for verification or is blocked on an owner conflict (retried).
func claimableCatchUpState(state string) bool {
	return state == billingc.CatchUpPendingVerification || state == billingc.CatchUpBlockedOnOwnerConflict
}

// ownerConflict turns an owner conflict (with the owner's fact) into the
// step's blocking error for claim; any other error stays as it is.
func ownerConflict(claim *catchUpClaim, err error) error {
	var conflict *SettlementInputOwnerConflictError
	if errors.As(err, &conflict) {
		return &catchUpBlockingError{claim: claim, conflict: conflict, err: err}
	}
	return err
}

// catchUpBlockingError carries an owner conflict with the claim it blocks.
type catchUpBlockingError struct {
	claim    *catchUpClaim
	conflict *SettlementInputOwnerConflictError
	err      error
}

func (e *catchUpBlockingError) Error() string { return e.err.Error() }
func (e *catchUpBlockingError) Unwrap() error { return e.err }
