package receipt

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
)

// MeteringInputWorkLane is MeteringInputWork@1.lane — our definition (the
// spec references the field without spelling it out): the lane identity of
// the receipt's lane union without its coordination state,
//
//	{ kind=eligibility_and_settlement_input }
//	| { kind=provider_cost; gatewayDeploymentId; sourceEvidenceDimensionKey }
type MeteringInputWorkLane struct {
	Kind                       string // LaneEligibility | LaneProviderCost
	GatewayDeploymentID        string // provider_cost only
	SourceEvidenceDimensionKey string // provider_cost only
}

func readWorkLane(o *strict.Object) MeteringInputWorkLane {
	var l MeteringInputWorkLane
	l.Kind = o.Union("kind", map[string]func(*strict.Object){
		LaneEligibility: func(*strict.Object) {},
		LaneProviderCost: func(b *strict.Object) {
			l.GatewayDeploymentID = b.String("gatewayDeploymentId")
			l.SourceEvidenceDimensionKey = b.String("sourceEvidenceDimensionKey")
		},
	})
	return l
}

func (l MeteringInputWorkLane) toJSON() map[string]any {
	m := map[string]any{"kind": l.Kind}
	if l.Kind == LaneProviderCost {
		m["gatewayDeploymentId"] = l.GatewayDeploymentID
		m["sourceEvidenceDimensionKey"] = l.SourceEvidenceDimensionKey
	}
	return m
}

func (l MeteringInputWorkLane) validate(v *strict.Reader, path string) {
	switch l.Kind {
	case LaneEligibility:
		if l.GatewayDeploymentID != "" || l.SourceEvidenceDimensionKey != "" {
			v.Fail(path, strict.ErrMixedUnion, "eligibility lane carries provider cost identity")
		}
	case LaneProviderCost:
	default:
		v.Fail(path+".kind", strict.ErrUnknownEnum, l.Kind)
	}
}

// WorkAttemptHead is the head both work-attempt facts share: the work
// quadruple and operation, attempt, generation, lane, lane trigger digest,
// attempt number and fencing token.
type WorkAttemptHead struct {
	Work               strict.Quadruple
	OperationID        string // meteringInputWorkOperationId
	ExecutionAttemptID string
	WorkGeneration     int64
	Lane               MeteringInputWorkLane
	LaneTriggerDigest  digest.Digest
	AttemptNumber      int64
	FencingToken       string
}

func readWorkAttemptHead(o *strict.Object) WorkAttemptHead {
	return WorkAttemptHead{
		Work:               o.Quadruple(prefixWork),
		OperationID:        o.String("meteringInputWorkOperationId"),
		ExecutionAttemptID: o.UUID("executionAttemptId"),
		WorkGeneration:     o.IntMin("workGeneration", 1),
		Lane:               readWorkLane(o.Object("lane")),
		LaneTriggerDigest:  o.DigestPair("laneTriggerDigestAlgorithmVersion", "laneTriggerDigest"),
		AttemptNumber:      o.IntMin("attemptNumber", 1),
		FencingToken:       o.String("fencingToken"),
	}
}

func (h WorkAttemptHead) put(m map[string]any) {
	h.Work.Put(m, prefixWork)
	m["meteringInputWorkOperationId"] = h.OperationID
	m["executionAttemptId"] = h.ExecutionAttemptID
	m["workGeneration"] = h.WorkGeneration
	m["lane"] = h.Lane.toJSON()
	putDigest(m, "laneTriggerDigestAlgorithmVersion", "laneTriggerDigest", h.LaneTriggerDigest)
	m["attemptNumber"] = h.AttemptNumber
	m["fencingToken"] = h.FencingToken
}

func (h WorkAttemptHead) validate(v *strict.Reader) {
	h.Lane.validate(v, "$.lane")
}

// MeteringInputWorkAttemptFinished@1 outcome states.
const (
	FinishWaitingForCounterpart = "waiting_for_counterpart"
	FinishApplied               = "applied"
	FinishAvailabilityProcessed = "availability_processed"
	FinishSuperseded            = "superseded"

	WaitingForExecutionEligibility = "execution_eligibility"
	WaitingForGatewayUsage         = "gateway_usage"
)

// MeteringInputWorkAttemptFinished is MeteringInputWorkAttemptFinished@1, the
// one finish of a started work attempt. Its candidate excludes the ref,
// finishedAt and the digest.
type MeteringInputWorkAttemptFinished struct {
	Finished strict.Quadruple
	WorkAttemptHead
	Outcome    FinishOutcome
	FinishedAt time.Time
}

// FinishOutcome is the outcome union:
//
//	{ kind=eligibility_and_settlement_input; state=waiting_for_counterpart; waitingFor }
//	| { kind=eligibility_and_settlement_input; state=applied; settlementInputSnapshotCount; settlementInputSnapshots[] }
//	| { kind=provider_cost; state=availability_processed; providerCostAvailabilityProcessing quadruple }
//	| { kind=eligibility_and_settlement_input|provider_cost; state=superseded; supersededByWorkGeneration }
type FinishOutcome struct {
	Kind                       string
	State                      string
	WaitingFor                 string            // waiting_for_counterpart
	Snapshots                  *SnapshotSet      // applied
	Processing                 *strict.Quadruple // availability_processed
	SupersededByWorkGeneration int64             // superseded
}

// DecodeMeteringInputWorkAttemptFinished strictly decodes and validates the fact.
func DecodeMeteringInputWorkAttemptFinished(doc []byte) (*MeteringInputWorkAttemptFinished, error) {
	return decode(doc, WorkFinishedDef, readMeteringInputWorkAttemptFinished)
}

// readMeteringInputWorkAttemptFinished binds the fact from a parsed object.
func readMeteringInputWorkAttemptFinished(o *strict.Object) *MeteringInputWorkAttemptFinished {
	x := &MeteringInputWorkAttemptFinished{Finished: readSelf(o, prefixWorkFinished)}
	x.WorkAttemptHead = readWorkAttemptHead(o)
	out := o.Object("outcome")
	x.Outcome.State = out.Union("state", map[string]func(*strict.Object){
		FinishWaitingForCounterpart: func(b *strict.Object) {
			x.Outcome.Kind = b.Enum("kind", LaneEligibility, LaneProviderCost)
			x.Outcome.WaitingFor = b.Enum("waitingFor", WaitingForExecutionEligibility, WaitingForGatewayUsage)
		},
		FinishApplied: func(b *strict.Object) {
			x.Outcome.Kind = b.Enum("kind", LaneEligibility, LaneProviderCost)
			s := readSnapshotSet(b)
			x.Outcome.Snapshots = &s
		},
		FinishAvailabilityProcessed: func(b *strict.Object) {
			x.Outcome.Kind = b.Enum("kind", LaneEligibility, LaneProviderCost)
			q := b.Quadruple(prefixProcessing)
			x.Outcome.Processing = &q
		},
		FinishSuperseded: func(b *strict.Object) {
			x.Outcome.Kind = b.Enum("kind", LaneEligibility, LaneProviderCost)
			x.Outcome.SupersededByWorkGeneration = b.IntMin("supersededByWorkGeneration", 1)
		},
	})
	x.FinishedAt = o.Timestamp("finishedAt")
	return x
}

// finishKinds lists the outcome kinds each finish state allows.
var finishKinds = map[string][]string{
	FinishWaitingForCounterpart: {LaneEligibility},
	FinishApplied:               {LaneEligibility},
	FinishAvailabilityProcessed: {LaneProviderCost},
	FinishSuperseded:            {LaneEligibility, LaneProviderCost},
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *MeteringInputWorkAttemptFinished) Validate() error {
	return validateObject(x, WorkFinishedDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *MeteringInputWorkAttemptFinished) rules(v *strict.Reader) {
	x.WorkAttemptHead.validate(v)
	o := x.Outcome
	kinds, known := finishKinds[o.State]
	switch {
	case !known:
		v.Fail("$.outcome.state", strict.ErrUnknownEnum, o.State)
	case !contains(kinds, o.Kind):
		v.Fail("$.outcome.kind", strict.ErrMixedUnion, fmt.Sprintf("state %s does not exist for kind %q", o.State, o.Kind))
	case o.Kind != x.Lane.Kind:
		v.Fail("$.outcome.kind", ErrOutcomeLane, fmt.Sprintf("outcome %s, lane %s", o.Kind, x.Lane.Kind))
	}
	branchData := map[string]bool{
		FinishWaitingForCounterpart: o.WaitingFor != "",
		FinishApplied:               o.Snapshots != nil,
		FinishAvailabilityProcessed: o.Processing != nil,
		FinishSuperseded:            o.SupersededByWorkGeneration != 0,
	}
	for state, present := range branchData {
		if present != (state == o.State) && known {
			v.Fail("$.outcome", strict.ErrMixedUnion, "outcome data does not match state "+o.State)
			break
		}
	}
	switch o.State {
	case FinishWaitingForCounterpart:
		if o.WaitingFor != WaitingForExecutionEligibility && o.WaitingFor != WaitingForGatewayUsage {
			v.Fail("$.outcome.waitingFor", strict.ErrUnknownEnum, o.WaitingFor)
		}
	case FinishApplied:
		if o.Snapshots != nil {
			o.Snapshots.validate(v, "$.outcome", "", x.ExecutionAttemptID)
		}
	case FinishAvailabilityProcessed:
		// The processing quadruple's shape is checked by the description.
	case FinishSuperseded:
		if o.SupersededByWorkGeneration <= x.WorkGeneration {
			v.Fail("$.outcome.supersededByWorkGeneration", ErrSupersededGeneration,
				fmt.Sprintf("%d ≤ workGeneration %d", o.SupersededByWorkGeneration, x.WorkGeneration))
		}
	}
	checkTime(v, "$.finishedAt", x.FinishedAt)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ToJSON returns the full JSON form.
func (x *MeteringInputWorkAttemptFinished) ToJSON() map[string]any {
	m := map[string]any{"finishedAt": strict.FormatTimestamp(x.FinishedAt)}
	x.Finished.Put(m, prefixWorkFinished)
	x.WorkAttemptHead.put(m)
	out := map[string]any{"kind": x.Outcome.Kind, "state": x.Outcome.State}
	switch x.Outcome.State {
	case FinishWaitingForCounterpart:
		out["waitingFor"] = x.Outcome.WaitingFor
	case FinishApplied:
		if x.Outcome.Snapshots != nil {
			x.Outcome.Snapshots.put(out)
		}
	case FinishAvailabilityProcessed:
		if x.Outcome.Processing != nil {
			x.Outcome.Processing.Put(out, prefixProcessing)
		}
	case FinishSuperseded:
		out["supersededByWorkGeneration"] = x.Outcome.SupersededByWorkGeneration
	}
	m["outcome"] = out
	return m
}

func (x *MeteringInputWorkAttemptFinished) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return workFinishedSelf, &x.Finished
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *MeteringInputWorkAttemptFinished) Seal() error                    { return sealObject(x) }
func (x *MeteringInputWorkAttemptFinished) Digest() (digest.Digest, error) { return candidateOf(x) }
func (x *MeteringInputWorkAttemptFinished) VerifyDigest() error            { return verifyObject(x) }

// MeteringInputWorkAttemptBlocked@1 blockingCause kinds and the prefix of the
// quadruple each binds.
const (
	CauseExecutionEligibilityOwnerConflict = "execution_eligibility_owner_conflict"
	CauseGatewayUsageOwnerConflict         = "gateway_usage_owner_conflict"
	CauseGatewayBindingOwnerConflict       = "gateway_binding_owner_conflict"
	CauseEligibilityProcessingConflict     = "eligibility_processing_conflict"
	CauseProviderCostProcessingConflict    = "provider_cost_processing_conflict"
)

var blockingCausePrefix = map[string]string{
	CauseExecutionEligibilityOwnerConflict: "executionEligibilityConflictFact",
	CauseGatewayUsageOwnerConflict:         "gatewayEvidenceConflictFact",
	CauseGatewayBindingOwnerConflict:       "gatewayBindingConflictFact",
	CauseEligibilityProcessingConflict:     prefixEligibilityEvidence,
	CauseProviderCostProcessingConflict:    prefixProviderCostEvidence,
}

// laneCauses: the eligibility lane allows the execution / gateway evidence /
// gateway binding owner branches or eligibility processing; the provider cost
// lane only the outer provider_cost_processing_conflict.
var laneCauses = map[string][]string{
	LaneEligibility:  {CauseExecutionEligibilityOwnerConflict, CauseGatewayUsageOwnerConflict, CauseGatewayBindingOwnerConflict, CauseEligibilityProcessingConflict},
	LaneProviderCost: {CauseProviderCostProcessingConflict},
}

// BlockingCause is a blockingCause branch: its kind and the full quadruple of
// the conflict fact or evidence it binds.
type BlockingCause struct {
	Kind string
	Fact strict.Quadruple
}

// MeteringInputWorkAttemptBlocked is MeteringInputWorkAttemptBlocked@1, the
// non-terminal block of a work attempt (an attempt audit, never a work
// finish or an operations case). Its candidate excludes the ref, blockedAt
// and the digest.
type MeteringInputWorkAttemptBlocked struct {
	Blocked strict.Quadruple
	WorkAttemptHead
	BlockingCause BlockingCause
	BlockedAt     time.Time
}

// DecodeMeteringInputWorkAttemptBlocked strictly decodes and validates the fact.
func DecodeMeteringInputWorkAttemptBlocked(doc []byte) (*MeteringInputWorkAttemptBlocked, error) {
	return decode(doc, WorkBlockedDef, readMeteringInputWorkAttemptBlocked)
}

// readMeteringInputWorkAttemptBlocked binds the fact from a parsed object.
func readMeteringInputWorkAttemptBlocked(o *strict.Object) *MeteringInputWorkAttemptBlocked {
	x := &MeteringInputWorkAttemptBlocked{Blocked: readSelf(o, prefixWorkBlocked)}
	x.WorkAttemptHead = readWorkAttemptHead(o)
	bc := o.Object("blockingCause")
	branches := make(map[string]func(*strict.Object), len(blockingCausePrefix))
	for kind, prefix := range blockingCausePrefix {
		branches[kind] = func(b *strict.Object) { x.BlockingCause.Fact = b.Quadruple(prefix) }
	}
	x.BlockingCause.Kind = bc.Union("kind", branches)
	x.BlockedAt = o.Timestamp("blockedAt")
	return x
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *MeteringInputWorkAttemptBlocked) Validate() error { return validateObject(x, WorkBlockedDef) }

// rules checks the refinement rules of a value whose shape is valid.
func (x *MeteringInputWorkAttemptBlocked) rules(v *strict.Reader) {
	x.WorkAttemptHead.validate(v)
	if _, known := blockingCausePrefix[x.BlockingCause.Kind]; known && !contains(laneCauses[x.Lane.Kind], x.BlockingCause.Kind) {
		v.Fail("$.blockingCause.kind", ErrBlockingCauseLane, fmt.Sprintf("%s not allowed for lane %s", x.BlockingCause.Kind, x.Lane.Kind))
	}
	checkTime(v, "$.blockedAt", x.BlockedAt)
}

// ToJSON returns the full JSON form.
func (x *MeteringInputWorkAttemptBlocked) ToJSON() map[string]any {
	m := map[string]any{"blockedAt": strict.FormatTimestamp(x.BlockedAt)}
	x.Blocked.Put(m, prefixWorkBlocked)
	x.WorkAttemptHead.put(m)
	bc := map[string]any{"kind": x.BlockingCause.Kind}
	x.BlockingCause.Fact.Put(bc, blockingCausePrefix[x.BlockingCause.Kind])
	m["blockingCause"] = bc
	return m
}

func (x *MeteringInputWorkAttemptBlocked) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return workBlockedSelf, &x.Blocked
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *MeteringInputWorkAttemptBlocked) Seal() error                    { return sealObject(x) }
func (x *MeteringInputWorkAttemptBlocked) Digest() (digest.Digest, error) { return candidateOf(x) }
func (x *MeteringInputWorkAttemptBlocked) VerifyDigest() error            { return verifyObject(x) }
