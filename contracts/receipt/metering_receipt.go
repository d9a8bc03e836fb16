package receipt

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// Event pairs the Metering input processor consumes.
const (
	EventExecutionAttemptEligibilityFinalized = "execution.attempt-eligibility.finalized@1"
	EventGatewayAvailabilityCurrentChanged    = "gateway.evidence-availability.current-changed@1"
	eventSchemaVersion1                       = "1"
)

// MeteringInputProcessorConsumerReceipt@1 literals.
const (
	SourceExecutionEligibility = "execution_eligibility"
	SourceGatewayAvailability  = "gateway_availability"

	EvidenceProviderUsage = "provider_usage"
	EvidenceProviderCost  = "provider_cost"

	OutcomeAdvanced        = "advanced"
	OutcomeAlreadyObserved = "already_observed"

	LaneEligibility  = "eligibility_and_settlement_input"
	LaneProviderCost = "provider_cost"

	// Eligibility lane coordination states.
	StateWaitingForExecution    = "waiting_for_execution"
	StateWaitingForGatewayUsage = "waiting_for_gateway_usage"
	StatePending                = "pending"
	StateApplied                = "applied"
	StateBlockedOnOwnerConflict = "blocked_on_owner_conflict"

	// Provider cost lane coordination states (StatePending is shared).
	StateAvailabilityProcessed       = "availability_processed"
	StateWaitingForEvidence          = "waiting_for_evidence"
	StateNoCostEvidence              = "no_cost_evidence"
	StateBlockedOnProcessingConflict = "blocked_on_processing_conflict"
	StateReconciliationRequired      = "reconciliation_required"

	// processingOutcome literals, one fixed per finished provider cost state.
	ProcessingAvailableApplied       = "available_applied"
	ProcessingWaitingForEvidence     = "waiting_for_evidence"
	ProcessingNoCostEvidence         = "no_cost_evidence"
	ProcessingReconciliationRequired = "reconciliation_required"

	// Gateway availability states (availabilityState).
	AvailabilityAvailable   = "available"
	AvailabilityPending     = "pending"
	AvailabilityNotReported = "not_reported"
	AvailabilityUnavailable = "unavailable"
	AvailabilityConflicting = "conflicting"
)

var (
	availabilityStates = []string{AvailabilityAvailable, AvailabilityPending, AvailabilityNotReported, AvailabilityUnavailable, AvailabilityConflicting}
	processingOutcomes = []string{ProcessingAvailableApplied, ProcessingWaitingForEvidence, ProcessingNoCostEvidence, ProcessingReconciliationRequired}
	// processingOutcomeOf fixes the processingOutcome of each finished provider cost state.
	processingOutcomeOf = map[string]string{
		StateAvailabilityProcessed:  ProcessingAvailableApplied,
		StateWaitingForEvidence:     ProcessingWaitingForEvidence,
		StateNoCostEvidence:         ProcessingNoCostEvidence,
		StateReconciliationRequired: ProcessingReconciliationRequired,
	}
)

// MeteringInputProcessorConsumerReceipt is MeteringInputProcessorConsumerReceipt@1:
// the Metering owner's receipt that an execution eligibility or gateway
// availability event was durably accepted, freezing the lane's fence
// revision, latest work generation, trigger digest and coordination state
// after the inbox transaction. The candidate covers every field except the
// repository-owned ref, committedAt and the digest.
type MeteringInputProcessorConsumerReceipt struct {
	Header
	Source      MeteringSource
	Outcome     string // OutcomeAdvanced | OutcomeAlreadyObserved
	Lane        MeteringLane
	CommittedAt time.Time
}

// MeteringSource is the source union; exactly the pointer of Kind is set.
type MeteringSource struct {
	Kind                 string // SourceExecutionEligibility | SourceGatewayAvailability
	ExecutionEligibility *ExecutionEligibilitySource
	GatewayAvailability  *GatewayAvailabilitySource
}

// ExecutionEligibilitySource is source.kind=execution_eligibility
// (eventType=execution.attempt-eligibility.finalized@1; eventSchemaVersion=1).
type ExecutionEligibilitySource struct {
	Tenant                   Tenant
	BillingReservationID     string
	BillingAccountID         string
	RunID                    string
	RunStepID                string
	ExecutionAttemptID       string
	AttemptExecutionManifest strict.Quadruple
	ExecutionEligibilityFact strict.Quadruple
}

// GatewayAvailabilitySource is source.kind=gateway_availability
// (eventType=gateway.evidence-availability.current-changed@1; eventSchemaVersion=1).
type GatewayAvailabilitySource struct {
	ExecutionAttemptID              string
	GatewayDeploymentID             string
	AttemptExecutionManifest        strict.Quadruple
	ProviderEvidenceKind            string // EvidenceProviderUsage | EvidenceProviderCost
	EvidenceDimensionKey            string
	CurrentAvailability             strict.Quadruple
	CurrentAvailabilityStateVersion int64
}

// MeteringLane is the lane union; exactly the pointer of Kind is set.
type MeteringLane struct {
	Kind         string // LaneEligibility | LaneProviderCost
	Eligibility  *EligibilityLane
	ProviderCost *ProviderCostLane
}

// EligibilityLane is lane.kind=eligibility_and_settlement_input.
type EligibilityLane struct {
	FenceRevision        int64 // eligibilityFenceRevision
	LatestWorkGeneration int64 // latestEligibilityWorkGeneration (0: no work scheduled yet)
	TriggerDigest        digest.Digest
	Coordination         EligibilityCoordination
}

// EligibilityCoordination is the eligibility lane's coordinationState union.
//
//   - waiting_for_execution | waiting_for_gateway_usage: ActiveWork nil,
//     LastFinishedWork (nil = {state=none});
//   - pending: ActiveWork;
//   - applied: Applied (ActiveWork nil);
//   - blocked_on_owner_conflict: ActiveWork and Blocked.
type EligibilityCoordination struct {
	State            string
	ActiveWork       *WorkBinding // nil = {state=none}
	LastFinishedWork *FinishedWork
	Applied          *AppliedWork
	Blocked          *strict.Quadruple // MeteringInputWorkAttemptBlocked@1
}

// FinishedWork is lastFinishedWork={state=available; ...}: the last finished
// work and its MeteringInputWorkAttemptFinished@1 quadruple.
type FinishedWork struct {
	Work     WorkBinding // workGeneration
	Finished strict.Quadruple
}

// AppliedWork is the applied state's binding: the applied generation
// (appliedWorkGeneration), operation, work and finish quadruples and the
// sorted settlement snapshot set.
type AppliedWork struct {
	Work      WorkBinding // Generation is appliedWorkGeneration
	Finished  strict.Quadruple
	Snapshots SnapshotSet
}

// ProviderCostLane is lane.kind=provider_cost.
type ProviderCostLane struct {
	GatewayDeploymentID        string
	SourceEvidenceDimensionKey string
	FenceRevision              int64 // providerCostFenceRevision
	LatestWorkGeneration       int64 // latestProviderCostWorkGeneration
	TriggerDigest              digest.Digest
	Coordination               ProviderCostCoordination
}

// ProviderCostCoordination is the provider cost lane's coordinationState union.
//
//   - pending: ActiveWork;
//   - availability_processed | waiting_for_evidence | no_cost_evidence:
//     ProcessingOutcome (fixed per state) and Processed, ActiveWork nil;
//   - reconciliation_required: as above plus AvailabilityState=conflicting
//     and StateReasonCode;
//   - blocked_on_processing_conflict: ActiveWork and Blocked.
type ProviderCostCoordination struct {
	State             string
	ActiveWork        *WorkBinding
	ProcessingOutcome string
	AvailabilityState string
	StateReasonCode   string
	Processed         *ProcessedWork
	Blocked           *strict.Quadruple // MeteringInputWorkAttemptBlocked@1
}

// ProcessedWork binds a finished provider cost work: generation, operation,
// work, ProviderCostAvailabilityProcessingFact and finish quadruples.
type ProcessedWork struct {
	Work       WorkBinding // workGeneration
	Processing strict.Quadruple
	Finished   strict.Quadruple
}

// DecodeMeteringInputProcessorConsumerReceipt strictly decodes and validates
// the receipt (shape and refinement rules; VerifyDigest checks the digest).
func DecodeMeteringInputProcessorConsumerReceipt(doc []byte) (*MeteringInputProcessorConsumerReceipt, error) {
	return decode(doc, MeteringReceiptDef, readMeteringInputProcessorConsumerReceipt)
}

// readMeteringInputProcessorConsumerReceipt binds the receipt from a parsed object.
func readMeteringInputProcessorConsumerReceipt(o *strict.Object) *MeteringInputProcessorConsumerReceipt {
	x := &MeteringInputProcessorConsumerReceipt{Header: readHeader(o, prefixMeteringReceipt)}
	x.Source = readMeteringSource(o.Object("source"))
	x.Outcome = o.Enum("outcome", OutcomeAdvanced, OutcomeAlreadyObserved)
	x.Lane = readMeteringLane(o.Object("lane"))
	x.CommittedAt = o.Timestamp("committedAt")
	return x
}

func readMeteringSource(o *strict.Object) MeteringSource {
	var s MeteringSource
	s.Kind = o.Union("kind", map[string]func(*strict.Object){
		SourceExecutionEligibility: func(b *strict.Object) {
			b.Literal("eventType", EventExecutionAttemptEligibilityFinalized)
			b.Literal("eventSchemaVersion", eventSchemaVersion1)
			s.ExecutionEligibility = &ExecutionEligibilitySource{
				Tenant:                   readTenant(b),
				BillingReservationID:     b.UUID("billingReservationId"),
				BillingAccountID:         b.UUID("billingAccountId"),
				RunID:                    b.UUID("runId"),
				RunStepID:                b.UUID("runStepId"),
				ExecutionAttemptID:       b.UUID("executionAttemptId"),
				AttemptExecutionManifest: b.Quadruple(prefixAttemptManifest),
				ExecutionEligibilityFact: b.Quadruple(prefixEligibilityFact),
			}
		},
		SourceGatewayAvailability: func(b *strict.Object) {
			b.Literal("eventType", EventGatewayAvailabilityCurrentChanged)
			b.Literal("eventSchemaVersion", eventSchemaVersion1)
			s.GatewayAvailability = &GatewayAvailabilitySource{
				ExecutionAttemptID:              b.UUID("executionAttemptId"),
				GatewayDeploymentID:             b.String("gatewayDeploymentId"),
				AttemptExecutionManifest:        b.Quadruple(prefixAttemptManifest),
				ProviderEvidenceKind:            b.Enum("providerEvidenceKind", EvidenceProviderUsage, EvidenceProviderCost),
				EvidenceDimensionKey:            b.String("evidenceDimensionKey"),
				CurrentAvailability:             b.Quadruple(prefixCurrentAvailability),
				CurrentAvailabilityStateVersion: b.IntMin("currentAvailabilityStateVersion", 1),
			}
		},
	})
	return s
}

func readMeteringLane(o *strict.Object) MeteringLane {
	var l MeteringLane
	l.Kind = o.Union("kind", map[string]func(*strict.Object){
		LaneEligibility: func(b *strict.Object) {
			l.Eligibility = &EligibilityLane{
				FenceRevision:        b.IntMin("eligibilityFenceRevision", 1),
				LatestWorkGeneration: b.IntMin("latestEligibilityWorkGeneration", 0),
				TriggerDigest:        b.DigestPair("eligibilityTriggerDigestAlgorithmVersion", "eligibilityTriggerDigest"),
				Coordination:         readEligibilityCoordination(b.Object("coordinationState")),
			}
		},
		LaneProviderCost: func(b *strict.Object) {
			l.ProviderCost = &ProviderCostLane{
				GatewayDeploymentID:        b.String("gatewayDeploymentId"),
				SourceEvidenceDimensionKey: b.String("sourceEvidenceDimensionKey"),
				FenceRevision:              b.IntMin("providerCostFenceRevision", 1),
				LatestWorkGeneration:       b.IntMin("latestProviderCostWorkGeneration", 0),
				TriggerDigest:              b.DigestPair("providerCostTriggerDigestAlgorithmVersion", "providerCostTriggerDigest"),
				Coordination:               readProviderCostCoordination(b.Object("coordinationState")),
			}
		},
	})
	return l
}

// readActiveWork reads activeWork = {state=none} | {state=pending; workGeneration; meteringInputWorkOperationId; work quadruple}.
func readActiveWork(o *strict.Object) *WorkBinding {
	var w *WorkBinding
	o.Object("activeWork").Union("state", map[string]func(*strict.Object){
		"none": func(*strict.Object) {},
		StatePending: func(b *strict.Object) {
			wb := readWork(b, "workGeneration")
			w = &wb
		},
	})
	return w
}

// readBlockedFact binds the MeteringInputWorkAttemptBlocked@1 quadruple of a
// blocked state (blockedStateGuards keep finishes and processing facts out).
func readBlockedFact(b *strict.Object) *strict.Quadruple {
	q := b.Quadruple(prefixWorkBlocked)
	return &q
}

func readEligibilityCoordination(o *strict.Object) EligibilityCoordination {
	var c EligibilityCoordination
	waiting := func(b *strict.Object) {
		c.ActiveWork = readActiveWork(b)
		b.Object("lastFinishedWork").Union("state", map[string]func(*strict.Object){
			"none": func(*strict.Object) {},
			"available": func(f *strict.Object) {
				c.LastFinishedWork = &FinishedWork{Work: readWork(f, "workGeneration"), Finished: f.Quadruple(prefixWorkFinished)}
			},
		})
	}
	c.State = o.Union("state", map[string]func(*strict.Object){
		StateWaitingForExecution:    waiting,
		StateWaitingForGatewayUsage: waiting,
		StatePending:                func(b *strict.Object) { c.ActiveWork = readActiveWork(b) },
		StateApplied: func(b *strict.Object) {
			c.ActiveWork = readActiveWork(b)
			c.Applied = &AppliedWork{
				Work:      readWork(b, "appliedWorkGeneration"),
				Finished:  b.Quadruple(prefixWorkFinished),
				Snapshots: readSnapshotSet(b),
			}
		},
		StateBlockedOnOwnerConflict: func(b *strict.Object) {
			c.Blocked = readBlockedFact(b)
			c.ActiveWork = readActiveWork(b)
		},
	})
	return c
}

func readProviderCostCoordination(o *strict.Object) ProviderCostCoordination {
	var c ProviderCostCoordination
	finished := func(b *strict.Object) {
		c.ActiveWork = readActiveWork(b)
		c.ProcessingOutcome = b.Enum("processingOutcome", processingOutcomes...)
		c.Processed = &ProcessedWork{
			Work:       readWork(b, "workGeneration"),
			Processing: b.Quadruple(prefixProcessing),
			Finished:   b.Quadruple(prefixWorkFinished),
		}
	}
	c.State = o.Union("state", map[string]func(*strict.Object){
		StatePending:               func(b *strict.Object) { c.ActiveWork = readActiveWork(b) },
		StateAvailabilityProcessed: finished,
		StateWaitingForEvidence:    finished,
		StateNoCostEvidence:        finished,
		StateReconciliationRequired: func(b *strict.Object) {
			finished(b)
			c.AvailabilityState = b.Enum("availabilityState", availabilityStates...)
			c.StateReasonCode = b.String("stateReasonCode")
		},
		StateBlockedOnProcessingConflict: func(b *strict.Object) {
			c.Blocked = readBlockedFact(b)
			c.ActiveWork = readActiveWork(b)
		},
	})
	return c
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *MeteringInputProcessorConsumerReceipt) Validate() error {
	return validateObject(x, MeteringReceiptDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *MeteringInputProcessorConsumerReceipt) rules(v *strict.Reader) {
	x.Source.validate(v, "$.source")
	x.Lane.validate(v, "$.lane")
	x.validateSourceLane(v)
	checkTime(v, "$.committedAt", x.CommittedAt)
}

func (s MeteringSource) validate(v *strict.Reader, path string) {
	switch {
	case s.Kind == SourceExecutionEligibility && s.ExecutionEligibility != nil && s.GatewayAvailability == nil:
	case s.Kind == SourceGatewayAvailability && s.GatewayAvailability != nil && s.ExecutionEligibility == nil:
	default:
		v.Fail(path+".kind", strict.ErrMixedUnion, "source branch data does not match kind "+s.Kind)
	}
}

func (l MeteringLane) validate(v *strict.Reader, path string) {
	switch {
	case l.Kind == LaneEligibility && l.Eligibility != nil && l.ProviderCost == nil:
		e := l.Eligibility
		e.Coordination.validate(v, path+".coordinationState", e.LatestWorkGeneration)
	case l.Kind == LaneProviderCost && l.ProviderCost != nil && l.Eligibility == nil:
		p := l.ProviderCost
		p.Coordination.validate(v, path+".coordinationState", p.LatestWorkGeneration)
	default:
		v.Fail(path+".kind", strict.ErrMixedUnion, "lane branch data does not match kind "+l.Kind)
	}
}

// checkLatest records a bound generation that is not the lane's latest:
// pending binds exactly the latest generation's active work, and an old
// work, block or finish can never complete a newer head.
func checkLatest(v *strict.Reader, path string, generation, latest int64) {
	if generation != latest {
		v.Fail(path, ErrGenerationNotLatest, fmt.Sprintf("generation %d, lane latest %d", generation, latest))
	}
}

func checkActive(v *strict.Reader, path string, w *WorkBinding, wantPending bool, latest int64) {
	switch {
	case wantPending && w == nil:
		v.Fail(path+".activeWork", ErrActiveWorkNotPending, "")
	case !wantPending && w != nil:
		v.Fail(path+".activeWork", ErrActiveWorkNotNone, "")
	case w != nil:
		checkLatest(v, path+".activeWork.workGeneration", w.Generation, latest)
	}
}

func (c EligibilityCoordination) validate(v *strict.Reader, path string, latest int64) {
	switch c.State {
	case StateWaitingForExecution, StateWaitingForGatewayUsage:
		checkActive(v, path, c.ActiveWork, false, latest)
		if c.Applied != nil || c.Blocked != nil {
			v.Fail(path, strict.ErrMixedUnion, "waiting state carries applied or blocked data")
		}
		if f := c.LastFinishedWork; f != nil {
			checkLatest(v, path+".lastFinishedWork.workGeneration", f.Work.Generation, latest)
		}
	case StatePending:
		checkActive(v, path, c.ActiveWork, true, latest)
		if c.Applied != nil || c.Blocked != nil || c.LastFinishedWork != nil {
			v.Fail(path, strict.ErrMixedUnion, "pending state carries other state data")
		}
	case StateApplied:
		checkActive(v, path, c.ActiveWork, false, latest)
		if c.Blocked != nil || c.LastFinishedWork != nil {
			v.Fail(path, strict.ErrMixedUnion, "applied state carries other state data")
		}
		if c.Applied == nil {
			v.Fail(path+".appliedWorkGeneration", strict.ErrMissingField, "")
			return
		}
		checkLatest(v, path+".appliedWorkGeneration", c.Applied.Work.Generation, latest)
		// Snapshot membership in the attempt is checked with the source (validateSourceLane).
		c.Applied.Snapshots.validate(v, path, "", "")
	case StateBlockedOnOwnerConflict:
		if c.Applied != nil || c.LastFinishedWork != nil {
			v.Fail(path, ErrBlockedCarriesFinish, "")
		}
		if c.Blocked == nil {
			v.Fail(path+"."+strict.Fields(prefixWorkBlocked)[0], ErrBlockedMissingFact, "")
		}
		checkActive(v, path, c.ActiveWork, true, latest)
	default:
		v.Fail(path+".state", strict.ErrUnknownEnum, c.State)
	}
}

func (c ProviderCostCoordination) validate(v *strict.Reader, path string, latest int64) {
	switch c.State {
	case StatePending:
		checkActive(v, path, c.ActiveWork, true, latest)
		if c.Processed != nil || c.Blocked != nil || c.ProcessingOutcome != "" || c.AvailabilityState != "" || c.StateReasonCode != "" {
			v.Fail(path, strict.ErrMixedUnion, "pending state carries other state data")
		}
	case StateAvailabilityProcessed, StateWaitingForEvidence, StateNoCostEvidence, StateReconciliationRequired:
		if c.Processed == nil {
			v.Fail(path, ErrTerminalIncomplete, "")
			return
		}
		if c.Blocked != nil {
			v.Fail(path, strict.ErrMixedUnion, "finished state carries a blocked fact")
		}
		checkActive(v, path, c.ActiveWork, false, latest)
		if want := processingOutcomeOf[c.State]; c.ProcessingOutcome != want {
			v.Fail(path+".processingOutcome", ErrProcessingOutcome, fmt.Sprintf("state %s requires %s, got %q", c.State, want, c.ProcessingOutcome))
		}
		checkLatest(v, path+".workGeneration", c.Processed.Work.Generation, latest)
		if c.State == StateReconciliationRequired {
			if c.AvailabilityState != AvailabilityConflicting {
				v.Fail(path+".availabilityState", ErrReconciliationNotConflicting, fmt.Sprintf("got %q", c.AvailabilityState))
			}
		} else if c.AvailabilityState != "" || c.StateReasonCode != "" {
			v.Fail(path+".availabilityState", strict.ErrMixedUnion, "only reconciliation_required carries availabilityState/stateReasonCode")
		}
	case StateBlockedOnProcessingConflict:
		if c.Processed != nil || c.ProcessingOutcome != "" {
			v.Fail(path, ErrBlockedCarriesProcessing, "")
		}
		if c.AvailabilityState != "" || c.StateReasonCode != "" {
			v.Fail(path, strict.ErrMixedUnion, "blocked state carries reconciliation data")
		}
		if c.Blocked == nil {
			v.Fail(path+"."+strict.Fields(prefixWorkBlocked)[0], ErrBlockedMissingFact, "")
		}
		checkActive(v, path, c.ActiveWork, true, latest)
	default:
		v.Fail(path+".state", strict.ErrUnknownEnum, c.State)
	}
}

// validateSourceLane checks the source ↔ lane refinements: execution sources
// and gateway usage enter the eligibility lane, gateway cost enters only the
// provider cost lane of its own deployment and dimension; a waiting state
// never waits for the source this receipt records; applied snapshots belong
// to the source's attempt.
func (x *MeteringInputProcessorConsumerReceipt) validateSourceLane(v *strict.Reader) {
	var runStepID, attemptID string
	switch {
	case x.Source.ExecutionEligibility != nil:
		runStepID, attemptID = x.Source.ExecutionEligibility.RunStepID, x.Source.ExecutionEligibility.ExecutionAttemptID
		if x.Lane.Kind != LaneEligibility {
			v.Fail("$.lane.kind", ErrExecutionSourceLane, x.Lane.Kind)
			return
		}
	case x.Source.GatewayAvailability != nil:
		g := x.Source.GatewayAvailability
		attemptID = g.ExecutionAttemptID
		switch g.ProviderEvidenceKind {
		case EvidenceProviderUsage:
			if x.Lane.Kind != LaneEligibility {
				v.Fail("$.lane.kind", ErrGatewayUsageLane, x.Lane.Kind)
				return
			}
		case EvidenceProviderCost:
			if x.Lane.Kind != LaneProviderCost {
				v.Fail("$.lane.kind", ErrGatewayCostLane, x.Lane.Kind)
				return
			}
			if p := x.Lane.ProviderCost; p != nil && (p.GatewayDeploymentID != g.GatewayDeploymentID || p.SourceEvidenceDimensionKey != g.EvidenceDimensionKey) {
				v.Fail("$.lane", ErrCostLaneIdentity, fmt.Sprintf("lane %s/%s, source %s/%s", p.GatewayDeploymentID, p.SourceEvidenceDimensionKey, g.GatewayDeploymentID, g.EvidenceDimensionKey))
				return
			}
		}
	default:
		return
	}
	e := x.Lane.Eligibility
	if e == nil {
		return
	}
	switch e.Coordination.State {
	case StateWaitingForExecution:
		if x.Source.Kind == SourceExecutionEligibility {
			v.Fail("$.lane.coordinationState.state", ErrWaitingForOwnSource, "an execution eligibility receipt cannot wait for execution")
		}
	case StateWaitingForGatewayUsage:
		if x.Source.Kind == SourceGatewayAvailability {
			v.Fail("$.lane.coordinationState.state", ErrWaitingForOwnSource, "a gateway usage receipt cannot wait for gateway usage")
		}
	case StateApplied:
		if e.Coordination.Applied != nil {
			e.Coordination.Applied.Snapshots.validate(v, "$.lane.coordinationState", runStepID, attemptID)
		}
	}
}

// ToJSON returns the full JSON form.
func (x *MeteringInputProcessorConsumerReceipt) ToJSON() map[string]any {
	m := map[string]any{
		"source":      x.Source.toJSON(),
		"outcome":     x.Outcome,
		"lane":        x.Lane.toJSON(),
		"committedAt": strict.FormatTimestamp(x.CommittedAt),
	}
	x.Header.put(m, prefixMeteringReceipt, route.MeteringInputProcessor)
	return m
}

func (s MeteringSource) toJSON() map[string]any {
	m := map[string]any{"kind": s.Kind}
	switch {
	case s.ExecutionEligibility != nil:
		e := s.ExecutionEligibility
		m["eventType"] = EventExecutionAttemptEligibilityFinalized
		m["eventSchemaVersion"] = eventSchemaVersion1
		e.Tenant.put(m)
		m["billingReservationId"] = e.BillingReservationID
		m["billingAccountId"] = e.BillingAccountID
		m["runId"] = e.RunID
		m["runStepId"] = e.RunStepID
		m["executionAttemptId"] = e.ExecutionAttemptID
		e.AttemptExecutionManifest.Put(m, prefixAttemptManifest)
		e.ExecutionEligibilityFact.Put(m, prefixEligibilityFact)
	case s.GatewayAvailability != nil:
		g := s.GatewayAvailability
		m["eventType"] = EventGatewayAvailabilityCurrentChanged
		m["eventSchemaVersion"] = eventSchemaVersion1
		m["executionAttemptId"] = g.ExecutionAttemptID
		m["gatewayDeploymentId"] = g.GatewayDeploymentID
		g.AttemptExecutionManifest.Put(m, prefixAttemptManifest)
		m["providerEvidenceKind"] = g.ProviderEvidenceKind
		m["evidenceDimensionKey"] = g.EvidenceDimensionKey
		g.CurrentAvailability.Put(m, prefixCurrentAvailability)
		m["currentAvailabilityStateVersion"] = g.CurrentAvailabilityStateVersion
	}
	return m
}

func (l MeteringLane) toJSON() map[string]any {
	m := map[string]any{"kind": l.Kind}
	switch {
	case l.Eligibility != nil:
		e := l.Eligibility
		m["eligibilityFenceRevision"] = e.FenceRevision
		m["latestEligibilityWorkGeneration"] = e.LatestWorkGeneration
		putDigest(m, "eligibilityTriggerDigestAlgorithmVersion", "eligibilityTriggerDigest", e.TriggerDigest)
		m["coordinationState"] = e.Coordination.toJSON()
	case l.ProviderCost != nil:
		p := l.ProviderCost
		m["gatewayDeploymentId"] = p.GatewayDeploymentID
		m["sourceEvidenceDimensionKey"] = p.SourceEvidenceDimensionKey
		m["providerCostFenceRevision"] = p.FenceRevision
		m["latestProviderCostWorkGeneration"] = p.LatestWorkGeneration
		putDigest(m, "providerCostTriggerDigestAlgorithmVersion", "providerCostTriggerDigest", p.TriggerDigest)
		m["coordinationState"] = p.Coordination.toJSON()
	}
	return m
}

func activeWorkJSON(w *WorkBinding) map[string]any {
	if w == nil {
		return map[string]any{"state": "none"}
	}
	m := map[string]any{"state": StatePending}
	w.put(m, "workGeneration")
	return m
}

func (c EligibilityCoordination) toJSON() map[string]any {
	m := map[string]any{"state": c.State, "activeWork": activeWorkJSON(c.ActiveWork)}
	switch c.State {
	case StateWaitingForExecution, StateWaitingForGatewayUsage:
		lf := map[string]any{"state": "none"}
		if f := c.LastFinishedWork; f != nil {
			lf["state"] = "available"
			f.Work.put(lf, "workGeneration")
			f.Finished.Put(lf, prefixWorkFinished)
		}
		m["lastFinishedWork"] = lf
	}
	if a := c.Applied; a != nil {
		a.Work.put(m, "appliedWorkGeneration")
		a.Finished.Put(m, prefixWorkFinished)
		a.Snapshots.put(m)
	}
	if c.Blocked != nil {
		c.Blocked.Put(m, prefixWorkBlocked)
	}
	return m
}

func (c ProviderCostCoordination) toJSON() map[string]any {
	m := map[string]any{"state": c.State, "activeWork": activeWorkJSON(c.ActiveWork)}
	if c.ProcessingOutcome != "" {
		m["processingOutcome"] = c.ProcessingOutcome
	}
	if c.AvailabilityState != "" {
		m["availabilityState"] = c.AvailabilityState
	}
	if c.StateReasonCode != "" {
		m["stateReasonCode"] = c.StateReasonCode
	}
	if p := c.Processed; p != nil {
		p.Work.put(m, "workGeneration")
		p.Processing.Put(m, prefixProcessing)
		p.Finished.Put(m, prefixWorkFinished)
	}
	if c.Blocked != nil {
		c.Blocked.Put(m, prefixWorkBlocked)
	}
	return m
}

func (x *MeteringInputProcessorConsumerReceipt) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return meteringSelf, &x.Receipt
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *MeteringInputProcessorConsumerReceipt) Seal() error { return sealObject(x) }
func (x *MeteringInputProcessorConsumerReceipt) Digest() (digest.Digest, error) {
	return candidateOf(x)
}
func (x *MeteringInputProcessorConsumerReceipt) VerifyDigest() error { return verifyObject(x) }

func (x *MeteringInputProcessorConsumerReceipt) ReceiptDestination() route.Destination {
	return route.MeteringInputProcessor
}
func (x *MeteringInputProcessorConsumerReceipt) ReceiptConsumerName() string {
	return route.MeteringInputProcessorConsumer
}
func (x *MeteringInputProcessorConsumerReceipt) ReceiptEventType() string {
	switch x.Source.Kind {
	case SourceExecutionEligibility:
		return EventExecutionAttemptEligibilityFinalized
	case SourceGatewayAvailability:
		return EventGatewayAvailabilityCurrentChanged
	}
	return ""
}
func (x *MeteringInputProcessorConsumerReceipt) ReceiptIdentity() map[string]string {
	return identityMap(x.identity())
}

// identity: the execution source's Run/Step/Attempt, Manifest and
// Eligibility Fact "must equal the event item by item", with its tenant,
// account and reservation; the gateway source's attempt, deployment,
// manifest, evidence kind/dimension and current availability (quadruple and
// state version) are the event payload's availability identity.
func (x *MeteringInputProcessorConsumerReceipt) identity() identitySet {
	var s identitySet
	switch {
	case x.Source.ExecutionEligibility != nil:
		e := x.Source.ExecutionEligibility
		e.Tenant.identity(&s)
		s.req("billingReservationId", e.BillingReservationID)
		s.req("billingAccountId", e.BillingAccountID)
		s.req("runId", e.RunID)
		s.req("runStepId", e.RunStepID)
		s.req("executionAttemptId", e.ExecutionAttemptID)
		s.reqQuad(prefixAttemptManifest, e.AttemptExecutionManifest)
		s.reqQuad(prefixEligibilityFact, e.ExecutionEligibilityFact)
	case x.Source.GatewayAvailability != nil:
		g := x.Source.GatewayAvailability
		s.req("executionAttemptId", g.ExecutionAttemptID)
		s.req("gatewayDeploymentId", g.GatewayDeploymentID)
		s.reqQuad(prefixAttemptManifest, g.AttemptExecutionManifest)
		s.req("providerEvidenceKind", g.ProviderEvidenceKind)
		s.req("evidenceDimensionKey", g.EvidenceDimensionKey)
		s.reqQuad(prefixCurrentAvailability, g.CurrentAvailability)
		s.reqInt("currentAvailabilityStateVersion", g.CurrentAvailabilityStateVersion)
	}
	return s
}
