package receipt

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// Event pairs the Billing finalization coordinator consumes.
const (
	EventExecutionRunFinalizationClosed              = "execution.run-finalization.closed@1"
	EventFinalizationReconciliationResolutionApplied = "billing.finalization-reconciliation-resolution.applied@1"
)

// BillingFinalizationCoordinatorConsumerReceipt@1 literals.
const (
	CoordinatorSourceExecutionClosure = "execution_closure"
	CoordinatorSourceResolution       = "finalization_reconciliation_resolution"

	CoordinatorWorkScheduled     = "work_scheduled"
	CoordinatorAlreadySuperseded = "already_superseded"

	ResolutionActionReevaluate = "reevaluate_current_owner_state"
)

const (
	prefixRunAdmissionManifest     = "runAdmissionManifest"
	prefixRunExecutionFinalization = "runExecutionFinalization"
	prefixAttemptSetManifest       = "attemptSetManifest"
	prefixCaseIdentityReservation  = "finalizationCaseIdentityReservation"
	prefixResolutionApplied        = "finalizationReconciliationResolutionApplied"
)

// BillingFinalizationCoordinatorConsumerReceipt is
// BillingFinalizationCoordinatorConsumerReceipt@1. The candidate covers every
// field except the repository-owned ref, committedAt and the digest.
type BillingFinalizationCoordinatorConsumerReceipt struct {
	Header
	Source      CoordinatorSource
	Outcome     CoordinatorOutcome
	CommittedAt time.Time
}

// CoordinatorSource is the source union; exactly the pointer of Kind is set.
type CoordinatorSource struct {
	Kind       string // CoordinatorSourceExecutionClosure | CoordinatorSourceResolution
	Closure    *ExecutionClosureSource
	Resolution *ResolutionSource
}

// ExecutionClosureSource is source.kind=execution_closure
// (eventType=execution.run-finalization.closed@1; eventSchemaVersion=1).
type ExecutionClosureSource struct {
	Tenant                               Tenant
	BillingReservationID                 string
	BillingAccountID                     string
	RunID                                string
	ClosureOperationID                   string
	RunAdmissionManifest                 strict.Quadruple
	RunExecutionFinalization             strict.Quadruple
	RunExecutionFinalizationStateVersion int64
	AttemptSetManifest                   strict.Quadruple
	AttemptCount                         int64
}

// ResolutionSource is source.kind=finalization_reconciliation_resolution
// (eventType=billing.finalization-reconciliation-resolution.applied@1;
// eventSchemaVersion=1; resolutionRevision=1;
// action=reevaluate_current_owner_state).
type ResolutionSource struct {
	Tenant                                      Tenant
	BillingReservationID                        string
	BillingAccountID                            string
	RunID                                       string
	BillingFinalizationFenceID                  string
	ReconciliationCaseRef                       string
	ReconciliationGeneration                    int64
	ResolutionRevision                          int64 // always 1
	ResolutionOperationID                       string
	FinalizationCaseIdentityReservation         strict.Quadruple
	FinalizationReconciliationResolutionApplied strict.Quadruple
	ActorWorkforcePrincipalID                   string
}

// FinalizationWorkBinding is the scheduled finalization work: generation,
// trigger snapshot and Billing Finalization Work quadruples.
type FinalizationWorkBinding struct {
	WorkGeneration  int64
	TriggerSnapshot strict.Quadruple // billingFinalizationTriggerSnapshot
	Work            strict.Quadruple // billingFinalizationWork
}

func readFinalizationWork(o *strict.Object) FinalizationWorkBinding {
	return FinalizationWorkBinding{
		WorkGeneration:  o.IntMin("workGeneration", 1),
		TriggerSnapshot: o.Quadruple(prefixTriggerSnapshot),
		Work:            o.Quadruple(prefixFinalizationWork),
	}
}

func (w FinalizationWorkBinding) put(m map[string]any) {
	m["workGeneration"] = w.WorkGeneration
	w.TriggerSnapshot.Put(m, prefixTriggerSnapshot)
	w.Work.Put(m, prefixFinalizationWork)
}

// CoordinatorOutcome is the outcome union:
// { state=work_scheduled; finalizationFenceRevision; Work } | { state=already_superseded; finalizationFenceRevision }.
type CoordinatorOutcome struct {
	State                     string
	FinalizationFenceRevision int64
	Work                      *FinalizationWorkBinding // work_scheduled only
}

// DecodeBillingFinalizationCoordinatorConsumerReceipt strictly decodes and
// validates the receipt (shape and refinement rules; VerifyDigest checks the digest).
func DecodeBillingFinalizationCoordinatorConsumerReceipt(doc []byte) (*BillingFinalizationCoordinatorConsumerReceipt, error) {
	return decode(doc, CoordinatorReceiptDef, readBillingFinalizationCoordinatorConsumerReceipt)
}

// readBillingFinalizationCoordinatorConsumerReceipt binds the receipt from a parsed object.
func readBillingFinalizationCoordinatorConsumerReceipt(o *strict.Object) *BillingFinalizationCoordinatorConsumerReceipt {
	x := &BillingFinalizationCoordinatorConsumerReceipt{Header: readHeader(o, prefixCoordinatorReceipt)}
	src := o.Object("source")
	x.Source.Kind = src.Union("kind", map[string]func(*strict.Object){
		CoordinatorSourceExecutionClosure: func(b *strict.Object) {
			b.Literal("eventType", EventExecutionRunFinalizationClosed)
			b.Literal("eventSchemaVersion", eventSchemaVersion1)
			x.Source.Closure = &ExecutionClosureSource{
				Tenant:                               readTenant(b),
				BillingReservationID:                 b.UUID("billingReservationId"),
				BillingAccountID:                     b.UUID("billingAccountId"),
				RunID:                                b.UUID("runId"),
				ClosureOperationID:                   b.UUID("closureOperationId"),
				RunAdmissionManifest:                 b.Quadruple(prefixRunAdmissionManifest),
				RunExecutionFinalization:             b.Quadruple(prefixRunExecutionFinalization),
				RunExecutionFinalizationStateVersion: b.IntMin("runExecutionFinalizationStateVersion", 1),
				AttemptSetManifest:                   b.Quadruple(prefixAttemptSetManifest),
				AttemptCount:                         b.IntMin("attemptCount", 0),
			}
		},
		CoordinatorSourceResolution: func(b *strict.Object) {
			b.Literal("eventType", EventFinalizationReconciliationResolutionApplied)
			b.Literal("eventSchemaVersion", eventSchemaVersion1)
			x.Source.Resolution = &ResolutionSource{
				Tenant:                              readTenant(b),
				BillingReservationID:                b.UUID("billingReservationId"),
				BillingAccountID:                    b.UUID("billingAccountId"),
				RunID:                               b.UUID("runId"),
				BillingFinalizationFenceID:          b.UUID("billingFinalizationFenceId"),
				ReconciliationCaseRef:               b.String("reconciliationCaseRef"),
				ReconciliationGeneration:            b.IntMin("reconciliationGeneration", 1),
				ResolutionRevision:                  b.Int("resolutionRevision"),
				ResolutionOperationID:               b.UUID("resolutionOperationId"),
				FinalizationCaseIdentityReservation: b.Quadruple(prefixCaseIdentityReservation),
				FinalizationReconciliationResolutionApplied: b.Quadruple(prefixResolutionApplied),
				ActorWorkforcePrincipalID:                   b.String("actorWorkforcePrincipalId"),
			}
			b.Literal("action", ResolutionActionReevaluate)
		},
	})
	out := o.Object("outcome")
	x.Outcome.State = out.Union("state", map[string]func(*strict.Object){
		CoordinatorWorkScheduled: func(b *strict.Object) {
			x.Outcome.FinalizationFenceRevision = b.IntMin("finalizationFenceRevision", 1)
			w := readFinalizationWork(b)
			x.Outcome.Work = &w
		},
		CoordinatorAlreadySuperseded: func(b *strict.Object) {
			x.Outcome.FinalizationFenceRevision = b.IntMin("finalizationFenceRevision", 1)
		},
	})
	x.CommittedAt = o.Timestamp("committedAt")
	return x
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *BillingFinalizationCoordinatorConsumerReceipt) Validate() error {
	return validateObject(x, CoordinatorReceiptDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *BillingFinalizationCoordinatorConsumerReceipt) rules(v *strict.Reader) {
	s := x.Source
	switch {
	case s.Kind == CoordinatorSourceExecutionClosure && s.Closure != nil && s.Resolution == nil:
	case s.Kind == CoordinatorSourceResolution && s.Resolution != nil && s.Closure == nil:
		r := s.Resolution
		if r.ResolutionRevision != 1 {
			v.Fail("$.source.resolutionRevision", ErrResolutionRevisionNotOne, fmt.Sprintf("got %d", r.ResolutionRevision))
		}
	default:
		v.Fail("$.source.kind", strict.ErrMixedUnion, "source branch data does not match kind "+s.Kind)
	}
	o := x.Outcome
	switch {
	case o.State == CoordinatorWorkScheduled && o.Work != nil:
	case o.State == CoordinatorAlreadySuperseded && o.Work == nil:
	default:
		v.Fail("$.outcome.state", strict.ErrMixedUnion, "outcome branch data does not match state "+o.State)
	}
	if s.Kind == CoordinatorSourceExecutionClosure && o.State != CoordinatorWorkScheduled {
		// One condition, two spec sentences: closure only with work_scheduled,
		// already_superseded only for the resolution source.
		v.Fail("$.outcome.state", fmt.Errorf("%w; %w", ErrClosureNotWorkScheduled, ErrSupersededNotResolution), o.State)
	}
	checkTime(v, "$.committedAt", x.CommittedAt)
}

// ToJSON returns the full JSON form.
func (x *BillingFinalizationCoordinatorConsumerReceipt) ToJSON() map[string]any {
	m := map[string]any{
		"committedAt": strict.FormatTimestamp(x.CommittedAt),
	}
	x.Header.put(m, prefixCoordinatorReceipt, route.BillingFinalizationCoordinator)
	src := map[string]any{"kind": x.Source.Kind, "eventSchemaVersion": eventSchemaVersion1}
	switch {
	case x.Source.Closure != nil:
		c := x.Source.Closure
		src["eventType"] = EventExecutionRunFinalizationClosed
		c.Tenant.put(src)
		src["billingReservationId"] = c.BillingReservationID
		src["billingAccountId"] = c.BillingAccountID
		src["runId"] = c.RunID
		src["closureOperationId"] = c.ClosureOperationID
		c.RunAdmissionManifest.Put(src, prefixRunAdmissionManifest)
		c.RunExecutionFinalization.Put(src, prefixRunExecutionFinalization)
		src["runExecutionFinalizationStateVersion"] = c.RunExecutionFinalizationStateVersion
		c.AttemptSetManifest.Put(src, prefixAttemptSetManifest)
		src["attemptCount"] = c.AttemptCount
	case x.Source.Resolution != nil:
		r := x.Source.Resolution
		src["eventType"] = EventFinalizationReconciliationResolutionApplied
		r.Tenant.put(src)
		src["billingReservationId"] = r.BillingReservationID
		src["billingAccountId"] = r.BillingAccountID
		src["runId"] = r.RunID
		src["billingFinalizationFenceId"] = r.BillingFinalizationFenceID
		src["reconciliationCaseRef"] = r.ReconciliationCaseRef
		src["reconciliationGeneration"] = r.ReconciliationGeneration
		src["resolutionRevision"] = r.ResolutionRevision
		src["resolutionOperationId"] = r.ResolutionOperationID
		r.FinalizationCaseIdentityReservation.Put(src, prefixCaseIdentityReservation)
		r.FinalizationReconciliationResolutionApplied.Put(src, prefixResolutionApplied)
		src["actorWorkforcePrincipalId"] = r.ActorWorkforcePrincipalID
		src["action"] = ResolutionActionReevaluate
	}
	m["source"] = src
	out := map[string]any{"state": x.Outcome.State, "finalizationFenceRevision": x.Outcome.FinalizationFenceRevision}
	if x.Outcome.Work != nil {
		x.Outcome.Work.put(out)
	}
	m["outcome"] = out
	return m
}

func (x *BillingFinalizationCoordinatorConsumerReceipt) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return coordinatorSelf, &x.Receipt
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *BillingFinalizationCoordinatorConsumerReceipt) Seal() error { return sealObject(x) }
func (x *BillingFinalizationCoordinatorConsumerReceipt) Digest() (digest.Digest, error) {
	return candidateOf(x)
}
func (x *BillingFinalizationCoordinatorConsumerReceipt) VerifyDigest() error { return verifyObject(x) }

func (x *BillingFinalizationCoordinatorConsumerReceipt) ReceiptDestination() route.Destination {
	return route.BillingFinalizationCoordinator
}
func (x *BillingFinalizationCoordinatorConsumerReceipt) ReceiptConsumerName() string {
	return route.BillingFinalizationCoordinatorConsumer
}
func (x *BillingFinalizationCoordinatorConsumerReceipt) ReceiptEventType() string {
	switch x.Source.Kind {
	case CoordinatorSourceExecutionClosure:
		return EventExecutionRunFinalizationClosed
	case CoordinatorSourceResolution:
		return EventFinalizationReconciliationResolutionApplied
	}
	return ""
}
func (x *BillingFinalizationCoordinatorConsumerReceipt) ReceiptIdentity() map[string]string {
	return identityMap(x.identity())
}

// identity: the closure event self-contains Tenant/Account/Reservation/Run,
// the Run Admission Manifest, Closure Fact quadruple/state version, Attempt
// Set Manifest and Count; the resolution event self-contains
// Tenant/Account/Reservation/Run/Fence, Case Ref/Generation/Resolution
// Revision/Operation, Identity Reservation and Resolution Fact and the fixed
// action. All must equal the event item by item.
func (x *BillingFinalizationCoordinatorConsumerReceipt) identity() identitySet {
	var s identitySet
	switch {
	case x.Source.Closure != nil:
		c := x.Source.Closure
		c.Tenant.identity(&s)
		s.req("billingReservationId", c.BillingReservationID)
		s.req("billingAccountId", c.BillingAccountID)
		s.req("runId", c.RunID)
		s.req("closureOperationId", c.ClosureOperationID)
		s.reqQuad(prefixRunAdmissionManifest, c.RunAdmissionManifest)
		s.reqQuad(prefixRunExecutionFinalization, c.RunExecutionFinalization)
		s.reqInt("runExecutionFinalizationStateVersion", c.RunExecutionFinalizationStateVersion)
		s.reqQuad(prefixAttemptSetManifest, c.AttemptSetManifest)
		s.reqInt("attemptCount", c.AttemptCount)
	case x.Source.Resolution != nil:
		r := x.Source.Resolution
		r.Tenant.identity(&s)
		s.req("billingReservationId", r.BillingReservationID)
		s.req("billingAccountId", r.BillingAccountID)
		s.req("runId", r.RunID)
		s.req("billingFinalizationFenceId", r.BillingFinalizationFenceID)
		s.req("reconciliationCaseRef", r.ReconciliationCaseRef)
		s.reqInt("reconciliationGeneration", r.ReconciliationGeneration)
		s.reqInt("resolutionRevision", r.ResolutionRevision)
		s.req("resolutionOperationId", r.ResolutionOperationID)
		s.reqQuad(prefixCaseIdentityReservation, r.FinalizationCaseIdentityReservation)
		s.reqQuad(prefixResolutionApplied, r.FinalizationReconciliationResolutionApplied)
		s.req("actorWorkforcePrincipalId", r.ActorWorkforcePrincipalID)
		s.req("action", ResolutionActionReevaluate)
	}
	return s
}
