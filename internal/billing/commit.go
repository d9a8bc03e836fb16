package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/dbsqlc"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// Decision is a successful BillingFinalizationDecision the finalization
// pipeline commits: the Work generation that decided it, the outcome and
// amounts, and the quadruples of the objects it was decided from.
type Decision struct {
	FenceID        string
	WorkGeneration int64
	// OperationID is the generation's billingFinalizationOperationId.
	OperationID string
	// Outcome is settle_and_release_remainder or release_all
	// (contracts/billing Success*); blocked and reconciliation_required are
	// RecordEvaluationTx's.
	Outcome string
	// SettledAmount and ReleasedAmount are canonical decimal text; their sum
	// is the reservation.
	SettledAmount  string
	ReleasedAmount string
	// InputManifest is FinalizationInputManifest@1, ValidationBundle
	// FinalizationValidationBundle@1, DecisionObject the
	// BillingFinalizationDecision the outcome comes from.
	InputManifest    strict.Quadruple
	ValidationBundle strict.Quadruple
	DecisionObject   strict.Quadruple
}

// CommitOpts are optional per-call options.
type CommitOpts struct {
	// AfterStep runs after each of CommitSteps; an error aborts (tests
	// inject failures with it, each must leave no billing row).
	AfterStep func(ctx context.Context, tx pgx.Tx, step string) error
}

// CommitSteps are the writes of CommitFinalizationTx, in order.
var CommitSteps = []string{"ledger", "event", "committed", "reservation", "work", "fence"}

// CommitResult is the committed fact.
type CommitResult struct {
	Fact *billingc.Committed
	// Body is the fact's canonical bytes, byte-identical on replay.
	Body           []byte
	EventID        string
	EnvelopeDigest digest.Digest
	// Replayed: the same decision was committed before; nothing was written.
	Replayed bool
}

func (d Decision) validate() (reserved *big.Rat, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidDecision, fmt.Sprintf(format, args...))
	}
	if d.Outcome != billingc.SuccessSettleAndReleaseRemainder && d.Outcome != billingc.SuccessReleaseAll {
		return nil, bad("outcome %q is not a success (blocked and reconciliation_required are evaluations)", d.Outcome)
	}
	for name, q := range map[string]strict.Quadruple{"finalizationInputManifest": d.InputManifest,
		"finalizationValidationBundle": d.ValidationBundle, "billingFinalizationDecision": d.DecisionObject} {
		if err := q.Validate(); err != nil {
			return nil, bad("%s: %v", name, err)
		}
	}
	settled, err := billingc.ParseAmount(d.SettledAmount)
	if err != nil {
		return nil, bad("settledAmount: %v", err)
	}
	released, err := billingc.ParseAmount(d.ReleasedAmount)
	if err != nil {
		return nil, bad("releasedAmount: %v", err)
	}
	if d.Outcome == billingc.SuccessReleaseAll && settled.Sign() != 0 {
		return nil, bad("release_all settles nothing, not %s", d.SettledAmount)
	}
	if d.Outcome == billingc.SuccessSettleAndReleaseRemainder && settled.Sign() == 0 {
		return nil, bad("settle_and_release_remainder with nothing to settle is release_all")
	}
	return new(big.Rat).Add(settled, released), nil
}

// CommitFinalizationTx commits a successful finalization in the caller's
// transaction tx (BI-1): the balanced finalization postings, the
// BillingFinalizationCommitted@1 fact, billing.finalization.committed@1 with
// its deliveries (release.Appender), the reservation's terminal state, the
// Work and the fence's absorbing committed state. The fence is locked first;
// the Work must be its active generation with the closure applied.
//
// The same decision committed again returns the stored fact byte for byte
// (Replayed); another decision for a finalized reservation is
// ErrAlreadyFinalized, and PostgreSQL refuses a second fact per
// reservation. Any error leaves tx to be rolled back by the caller.
func CommitFinalizationTx(ctx context.Context, tx pgx.Tx, d Decision, opts CommitOpts) (CommitResult, error) {
	sum, err := d.validate()
	if err != nil {
		return CommitResult{}, err
	}
	step := func(name string) error {
		if opts.AfterStep == nil {
			return nil
		}
		if err := opts.AfterStep(ctx, tx, name); err != nil {
			return fmt.Errorf("finalization step %s: %w", name, err)
		}
		return nil
	}
	fence, err := queries.FenceLock(ctx, tx, d.FenceID)
	if err != nil {
		return CommitResult{}, fmt.Errorf("lock fence %s: %w", d.FenceID, notFound(err, ErrFenceNotFound))
	}
	if fence.CoordinationState == FenceCommitted {
		return replayCommit(ctx, tx, fence.BillingReservationID, d)
	}
	if fence.CoordinationState != FencePendingEvaluation || fence.ActiveWorkGeneration == nil || *fence.ActiveWorkGeneration != d.WorkGeneration {
		return CommitResult{}, fmt.Errorf("%w: fence %s is %s at generation %d, decision is for generation %d",
			ErrStaleWork, d.FenceID, fence.CoordinationState, fence.LatestWorkGeneration, d.WorkGeneration)
	}
	work, err := queries.WorkLock(ctx, tx, dbsqlc.WorkLockParams{BillingFinalizationFenceID: d.FenceID, WorkGeneration: d.WorkGeneration})
	if err != nil {
		return CommitResult{}, fmt.Errorf("lock work: %w", err)
	}
	if work.BillingFinalizationOperationID != d.OperationID || work.WorkState != WorkPending {
		return CommitResult{}, fmt.Errorf("%w: generation %d is operation %s (%s), decision names %s",
			ErrStaleWork, d.WorkGeneration, work.BillingFinalizationOperationID, work.WorkState, d.OperationID)
	}
	closure, err := queries.ClosureByFence(ctx, tx, d.FenceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return CommitResult{}, fmt.Errorf("%w: fence %s", ErrClosureNotApplied, d.FenceID)
	}
	if err != nil {
		return CommitResult{}, fmt.Errorf("read closure watermark: %w", err)
	}
	res, err := queries.ReservationLock(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return CommitResult{}, fmt.Errorf("lock reservation: %w", err)
	}
	reserved, err := billingc.ParseAmount(res.ReservedAmount)
	if err != nil {
		return CommitResult{}, fmt.Errorf("stored reserved amount %q: %w", res.ReservedAmount, err)
	}
	if res.EconomicIdentity != creditsIdentity() {
		return CommitResult{}, fmt.Errorf("%w: reservation economic identity %s", ErrInvalidDecision, res.EconomicIdentity)
	}
	if sum.Cmp(reserved) != 0 {
		return CommitResult{}, fmt.Errorf("%w: settled %s + released %s != reserved %s",
			ErrInvalidDecision, d.SettledAmount, d.ReleasedAmount, res.ReservedAmount)
	}
	now, err := txNow(ctx, tx)
	if err != nil {
		return CommitResult{}, err
	}

	// 1. The balanced finalization postings.
	postings := billingc.FinalizationPostings(res.ReservedAmount, d.SettledAmount, d.ReleasedAmount)
	group := PostingGroupID(res.BillingReservationID, GroupFinalization)
	if err := queries.PostFinalization(ctx, tx, dbsqlc.PostFinalizationParams{
		BillingReservationID: res.BillingReservationID, PostingGroupID: group, SettledAmount: d.SettledAmount,
		ReleasedAmount: d.ReleasedAmount, At: now,
	}); err != nil {
		return CommitResult{}, fmt.Errorf("post finalization: %w", err)
	}
	if err := step("ledger"); err != nil {
		return CommitResult{}, err
	}

	// 2. The fact, sealed, then its event (the event carries the fact's quadruple).
	state := billingc.ReservationSettled
	if d.Outcome == billingc.SuccessReleaseAll {
		state = billingc.ReservationReleased
	}
	fact := &billingc.Committed{
		Committed:  strict.Quadruple{Ref: "bfc-" + envelope.DeriveID(derivationCommittedRef, map[string]any{"billingFinalizationOperationId": d.OperationID})},
		TenantKind: res.TenantKind, TenantID: res.TenantID, WorkspaceID: res.WorkspaceID, ProjectID: deref(res.ProjectID),
		BillingReservationID: res.BillingReservationID, BillingAccountID: res.BillingAccountID, RunID: res.RunID,
		FenceID: d.FenceID, FenceRevision: fence.FinalizationFenceRevision + 1, WorkGeneration: d.WorkGeneration,
		OperationID: d.OperationID, Work: quad(work.WorkRef, work.WorkSchemaVersion, work.WorkDigestAlgorithmVersion, work.WorkDigest),
		RunAdmissionManifest: quad(res.RunAdmissionManifestRef, res.RunAdmissionManifestSchemaVersion,
			res.RunAdmissionManifestDigestAlgorithmVersion, res.RunAdmissionManifestDigest),
		ClosureEventID: closure.ClosureEventID,
		ClosureEnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(closure.ClosureEventEnvelopeDigestAlgorithmVersion),
			Value: closure.ClosureEventEnvelopeSha256},
		CoordinatorReceipt: quad(closure.CoordinatorReceiptRef, closure.CoordinatorReceiptSchemaVersion,
			closure.CoordinatorReceiptDigestAlgorithmVersion, closure.CoordinatorReceiptDigest),
		RunExecutionFinalization: quad(closure.RunExecutionFinalizationRef, closure.RunExecutionFinalizationSchemaVersion,
			closure.RunExecutionFinalizationDigestAlgorithmVersion, closure.RunExecutionFinalizationDigest),
		FinalizationStateVersion: closure.RunExecutionFinalizationStateVersion,
		AttemptSetManifest: quad(closure.AttemptSetManifestRef, closure.AttemptSetManifestSchemaVersion,
			closure.AttemptSetManifestDigestAlgorithmVersion, closure.AttemptSetManifestDigest),
		AttemptCount:  closure.AttemptCount,
		InputManifest: d.InputManifest, ValidationBundle: d.ValidationBundle, Decision: d.DecisionObject,
		Outcome: d.Outcome, EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"},
		ReservedAmount: res.ReservedAmount, SettledAmount: d.SettledAmount, ReleasedAmount: d.ReleasedAmount,
		ReservationState: state, LedgerPostingGroupID: group, Postings: postings, CommittedAt: now,
	}
	body, err := fact.Seal()
	if err != nil {
		return CommitResult{}, fmt.Errorf("%w: %w", ErrInvalidDecision, err)
	}
	ev := committedEvent(fact, res.CorrelationID, res.WalletReservedEventID)
	appended, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, ev)
	if err != nil {
		return CommitResult{}, fmt.Errorf("append billing.finalization.committed@1: %w", err)
	}
	if err := step("event"); err != nil {
		return CommitResult{}, err
	}
	evDigest := appended.Events[0].EnvelopeDigest
	fq := fact.Committed
	if err := queries.CommittedInsert(ctx, tx, dbsqlc.CommittedInsertParams{
		CommittedRef: fq.Ref, CommittedSchemaVersion: fq.SchemaVersion, CommittedDigestAlgorithmVersion: string(fq.DigestAlgorithmVersion),
		CommittedDigest: fq.Digest, BillingReservationID: res.BillingReservationID, BillingFinalizationFenceID: d.FenceID,
		WorkGeneration: d.WorkGeneration, BillingFinalizationOperationID: d.OperationID, FinalizationFenceRevision: fact.FenceRevision,
		Decision: d.Outcome, ReservedAmount: res.ReservedAmount, SettledAmount: d.SettledAmount, ReleasedAmount: d.ReleasedAmount,
		PostingGroupID: group, EventID: ev.EventID, EventEnvelopeSha256: evDigest.Value, CommittedBody: string(body), CommittedAt: now,
	}); err != nil {
		return CommitResult{}, fmt.Errorf("insert committed fact: %w", err)
	}
	if err := step("committed"); err != nil {
		return CommitResult{}, err
	}

	// 3. Terminal states: reservation, Work, fence.
	if err := queries.ReservationFinalize(ctx, tx, dbsqlc.ReservationFinalizeParams{
		BillingReservationID: res.BillingReservationID, State: state, SettledAmount: d.SettledAmount,
		ReleasedAmount: d.ReleasedAmount, CommittedRef: &fq.Ref, FinalizedAt: &now,
	}); err != nil {
		return CommitResult{}, fmt.Errorf("finalize reservation: %w", err)
	}
	if err := step("reservation"); err != nil {
		return CommitResult{}, err
	}
	if err := queries.WorkFinish(ctx, tx, dbsqlc.WorkFinishParams{
		BillingFinalizationFenceID: d.FenceID, WorkGeneration: d.WorkGeneration, WorkState: WorkCommitted, FinishedAt: &now,
	}); err != nil {
		return CommitResult{}, fmt.Errorf("finish work: %w", err)
	}
	if err := step("work"); err != nil {
		return CommitResult{}, err
	}
	if err := queries.FenceCommit(ctx, tx, dbsqlc.FenceCommitParams{
		BillingFinalizationFenceID: d.FenceID, CommittedRef: &fq.Ref, UpdatedAt: &now,
	}); err != nil {
		return CommitResult{}, fmt.Errorf("commit fence: %w", err)
	}
	if err := step("fence"); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Fact: fact, Body: body, EventID: ev.EventID, EnvelopeDigest: evDigest}, nil
}

// committedEvent builds billing.finalization.committed@1: aggregate the
// reservation at revision 2 (wallet.reserved@2.0 is revision 1), caused by
// wallet.reserved, under the generation's operation and the run's
// correlation id.
func committedEvent(f *billingc.Committed, correlationID, walletEventID string) envelope.Envelope {
	p := envelope.BillingFinalizationCommittedV1Payload{
		BillingReservationID: f.BillingReservationID, BillingAccountID: f.BillingAccountID, RunID: f.RunID,
		BillingFinalizationFenceID: f.FenceID, BillingFinalizationOperationID: f.OperationID,
		FinalizationFenceRevision: f.FenceRevision, BillingFinalizationDecision: f.Outcome,
		ReservationEconomicIdentity: f.EconomicIdentity, SettledAmount: f.SettledAmount, ReleasedAmount: f.ReleasedAmount,
	}
	p.SetBillingFinalizationCommitted(f.Committed)
	return envelope.Envelope{
		EventID: outbox.NewEventID(), EventType: envelope.BillingFinalizationCommittedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateBillingReservation, AggregateID: f.BillingReservationID, AggregateRevision: 2,
		TenantKind: f.TenantKind, TenantID: f.TenantID, WorkspaceID: f.WorkspaceID, ProjectID: f.ProjectID,
		CorrelationID: correlationID, CausationID: walletEventID, OperationID: f.OperationID,
		OccurredAt: f.CommittedAt, Payload: p.Map(),
	}
}

// replayCommit answers a decision for a committed fence: the same decision
// returns the stored fact byte for byte; any other is ErrAlreadyFinalized.
func replayCommit(ctx context.Context, tx pgx.Tx, reservationID string, d Decision) (CommitResult, error) {
	row, err := queries.CommittedByReservation(ctx, tx, reservationID)
	if err != nil {
		return CommitResult{}, fmt.Errorf("read committed fact: %w", err)
	}
	body := []byte(row.CommittedBody)
	fact, err := billingc.DecodeCommitted(body)
	if err != nil {
		return CommitResult{}, fmt.Errorf("stored committed fact: %w", err)
	}
	same := fact.WorkGeneration == d.WorkGeneration && fact.OperationID == d.OperationID && fact.Outcome == d.Outcome &&
		sameAmount(fact.SettledAmount, d.SettledAmount) && sameAmount(fact.ReleasedAmount, d.ReleasedAmount) &&
		fact.InputManifest == d.InputManifest && fact.ValidationBundle == d.ValidationBundle && fact.Decision == d.DecisionObject
	if !same {
		return CommitResult{}, fmt.Errorf("%w: %s was finalized by operation %s (%s)", ErrAlreadyFinalized, reservationID, fact.OperationID, fact.Outcome)
	}
	if !bytes.Equal(body, []byte(row.CommittedBody)) {
		return CommitResult{}, errors.New("billing: stored committed body changed while reading")
	}
	return CommitResult{Fact: fact, Body: body, EventID: row.EventID,
		EnvelopeDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: row.EventEnvelopeSha256}, Replayed: true}, nil
}

func sameAmount(a, b string) bool {
	x, err1 := billingc.ParseAmount(a)
	y, err2 := billingc.ParseAmount(b)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func notFound(err, sentinel error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return sentinel
	}
	return err
}

// txNow is the transaction timestamp at microsecond precision (database time).
func txNow(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	now, err := queries.TxNow(ctx, tx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read transaction time: %w", err)
	}
	return now.UTC().Truncate(time.Microsecond), nil
}
