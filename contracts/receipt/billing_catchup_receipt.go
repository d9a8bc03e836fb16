package receipt

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// EventSettlementInputCurrentChanged is the one pair the catch-up consumer receives.
const EventSettlementInputCurrentChanged = "metering.settlement-input.current-changed@1"

// BillingSettlementCatchUpConsumerReceipt@1 literals.
const (
	CatchUpWatermarkAdvanced = "watermark_advanced"
	CatchUpAlreadyObserved   = "already_observed"

	DurabilityFinalizationWorkScheduled  = "finalization_work_scheduled"
	DurabilitySettlementCatchUpScheduled = "settlement_catch_up_scheduled"
	DurabilityHeldForResolution          = "held_for_resolution"
)

// BillingSettlementCatchUpConsumerReceipt is
// BillingSettlementCatchUpConsumerReceipt@1. The candidate covers every field
// except the repository-owned ref, committedAt and the digest.
type BillingSettlementCatchUpConsumerReceipt struct {
	Header
	Tenant               Tenant
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	RunStepID            string
	ExecutionAttemptID   string
	ChargeDimensionKey   string
	EconomicIdentity     SettlementEconomicIdentity // settlementEconomicIdentity
	EventSettlementInput SettlementInputRef
	Outcome              CatchUpOutcome
	CommittedAt          time.Time
}

// SettlementInputRef is the settlement input five-tuple:
// settlementInputSnapshot quadruple + settlementInputStateVersion.
type SettlementInputRef struct {
	Snapshot     strict.Quadruple
	StateVersion int64
}

func readSettlementInput(o *strict.Object) SettlementInputRef {
	s := SettlementInputRef{
		Snapshot:     o.Quadruple(prefixSettlementInputSnapshot),
		StateVersion: o.IntMin("settlementInputStateVersion", 1),
	}
	o.Close()
	return s
}

func (s SettlementInputRef) toJSON() map[string]any {
	m := map[string]any{"settlementInputStateVersion": s.StateVersion}
	s.Snapshot.Put(m, prefixSettlementInputSnapshot)
	return m
}

// CatchUpOutcome is the outcome union:
//
//	{ kind=watermark_advanced; inboxRevision; durability }
//	| { kind=already_observed; inboxRevision; highestObservedSettlementInput }
type CatchUpOutcome struct {
	Kind            string
	InboxRevision   int64
	Durability      *CatchUpDurability  // watermark_advanced
	HighestObserved *SettlementInputRef // already_observed
}

// CatchUpDurability is the durability union; exactly the pointer of State is set.
type CatchUpDurability struct {
	State             string
	FinalizationWork  *FinalizationWorkScheduled  // finalization_work_scheduled
	SettlementCatchUp *SettlementCatchUpScheduled // settlement_catch_up_scheduled
	HeldForResolution *HeldForResolution          // held_for_resolution
}

// FinalizationWorkScheduled is durability.state=finalization_work_scheduled.
type FinalizationWorkScheduled struct {
	FinalizationFenceRevision int64
	Work                      FinalizationWorkBinding
}

// SettlementCatchUpScheduled is durability.state=settlement_catch_up_scheduled.
type SettlementCatchUpScheduled struct {
	SettlementCatchUpFenceRevision      int64
	WorkGeneration                      int64
	Work                                strict.Quadruple // billingSettlementCatchUpWork
	BillingCatchUpValidationOperationID string
}

// HeldForResolution is durability.state=held_for_resolution: no trigger, work,
// generation or catch-up operation.
type HeldForResolution struct {
	FinalizationFenceRevision  int64
	ReconciliationCaseRef      string
	ReconciliationGeneration   int64
	ExpectedResolutionRevision int64 // always 1
}

// Fields that belong to exactly one durability branch.
var (
	finalizationWorkFields = append(quadFields(prefixTriggerSnapshot, prefixFinalizationWork), "finalizationFenceRevision")
	catchUpWorkFields      = append(quadFields(prefixCatchUpWork), "settlementCatchUpFenceRevision", "billingCatchUpValidationOperationId")
	heldFields             = []string{fieldCaseRef, "reconciliationGeneration", "expectedResolutionRevision"}
	// held_for_resolution forbids trigger, work, generation and catch-up operation.
	heldForbidden = append(quadFields(prefixTriggerSnapshot, prefixFinalizationWork, prefixCatchUpWork),
		"workGeneration", "billingCatchUpValidationOperationId", "settlementCatchUpFenceRevision")
)

// DecodeBillingSettlementCatchUpConsumerReceipt strictly decodes and validates
// the receipt (shape and refinement rules; VerifyDigest checks the digest).
func DecodeBillingSettlementCatchUpConsumerReceipt(doc []byte) (*BillingSettlementCatchUpConsumerReceipt, error) {
	return decode(doc, CatchUpReceiptDef, readBillingSettlementCatchUpConsumerReceipt)
}

// readBillingSettlementCatchUpConsumerReceipt binds the receipt from a parsed object.
func readBillingSettlementCatchUpConsumerReceipt(o *strict.Object) *BillingSettlementCatchUpConsumerReceipt {
	x := &BillingSettlementCatchUpConsumerReceipt{Header: readHeader(o, prefixCatchUpReceipt)}
	o.Literal("eventType", EventSettlementInputCurrentChanged)
	o.Literal("eventSchemaVersion", eventSchemaVersion1)
	x.Tenant = readTenant(o)
	x.BillingReservationID = o.UUID("billingReservationId")
	x.BillingAccountID = o.UUID("billingAccountId")
	x.RunID = o.UUID("runId")
	x.RunStepID = o.UUID("runStepId")
	x.ExecutionAttemptID = o.UUID("executionAttemptId")
	x.ChargeDimensionKey = o.String("chargeDimensionKey")
	x.EconomicIdentity = readEconomicIdentity(o.Object("settlementEconomicIdentity"))
	x.EventSettlementInput = readSettlementInput(o.Object("eventSettlementInput"))
	out := o.Object("outcome")
	x.Outcome.Kind = out.Union("kind", map[string]func(*strict.Object){
		CatchUpWatermarkAdvanced: func(b *strict.Object) {
			x.Outcome.InboxRevision = b.IntMin("inboxRevision", 1)
			d := readDurability(b.Object("durability"))
			x.Outcome.Durability = &d
		},
		CatchUpAlreadyObserved: func(b *strict.Object) {
			x.Outcome.InboxRevision = b.IntMin("inboxRevision", 1)
			h := readSettlementInput(b.Object("highestObservedSettlementInput"))
			x.Outcome.HighestObserved = &h
		},
	})
	x.CommittedAt = o.Timestamp("committedAt")
	return x
}

func readDurability(o *strict.Object) CatchUpDurability {
	var d CatchUpDurability
	d.State = o.Union("state", map[string]func(*strict.Object){
		DurabilityFinalizationWorkScheduled: func(b *strict.Object) {
			d.FinalizationWork = &FinalizationWorkScheduled{
				FinalizationFenceRevision: b.IntMin("finalizationFenceRevision", 1),
				Work:                      readFinalizationWork(b),
			}
		},
		DurabilitySettlementCatchUpScheduled: func(b *strict.Object) {
			d.SettlementCatchUp = &SettlementCatchUpScheduled{
				SettlementCatchUpFenceRevision:      b.IntMin("settlementCatchUpFenceRevision", 1),
				WorkGeneration:                      b.IntMin("workGeneration", 1),
				Work:                                b.Quadruple(prefixCatchUpWork),
				BillingCatchUpValidationOperationID: b.String("billingCatchUpValidationOperationId"),
			}
		},
		DurabilityHeldForResolution: func(b *strict.Object) {
			d.HeldForResolution = &HeldForResolution{
				FinalizationFenceRevision:  b.IntMin("finalizationFenceRevision", 1),
				ReconciliationCaseRef:      b.String(fieldCaseRef),
				ReconciliationGeneration:   b.IntMin("reconciliationGeneration", 1),
				ExpectedResolutionRevision: b.Int("expectedResolutionRevision"),
			}
		},
	})
	return d
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *BillingSettlementCatchUpConsumerReceipt) Validate() error {
	return validateObject(x, CatchUpReceiptDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *BillingSettlementCatchUpConsumerReceipt) rules(v *strict.Reader) {
	x.EconomicIdentity.validate(v, "$.settlementEconomicIdentity")
	o := x.Outcome
	switch {
	case o.Kind == CatchUpWatermarkAdvanced && o.Durability != nil && o.HighestObserved == nil:
		o.Durability.validate(v, "$.outcome.durability")
	case o.Kind == CatchUpAlreadyObserved && o.HighestObserved != nil && o.Durability == nil:
		h, e := *o.HighestObserved, x.EventSettlementInput
		switch {
		case h.StateVersion < e.StateVersion:
			v.Fail("$.outcome.highestObservedSettlementInput.settlementInputStateVersion", ErrAlreadyObservedRegression,
				fmt.Sprintf("highest %d < event %d", h.StateVersion, e.StateVersion))
		case h.StateVersion == e.StateVersion && h.Snapshot != e.Snapshot:
			v.Fail("$.outcome.highestObservedSettlementInput", ErrSameRevisionDifferentSnapshot,
				fmt.Sprintf("state version %d bound to %s and %s", h.StateVersion, h.Snapshot.Ref, e.Snapshot.Ref))
		}
	default:
		v.Fail("$.outcome.kind", strict.ErrMixedUnion, "outcome branch data does not match kind "+o.Kind)
	}
	checkTime(v, "$.committedAt", x.CommittedAt)
}

func (d CatchUpDurability) validate(v *strict.Reader, path string) {
	n := 0
	for _, set := range []bool{d.FinalizationWork != nil, d.SettlementCatchUp != nil, d.HeldForResolution != nil} {
		if set {
			n++
		}
	}
	switch {
	case d.State == DurabilityFinalizationWorkScheduled && d.FinalizationWork != nil:
		if n > 1 {
			v.Fail(path, ErrDurabilityMixed, "")
			return
		}
	case d.State == DurabilitySettlementCatchUpScheduled && d.SettlementCatchUp != nil:
		if n > 1 {
			v.Fail(path, ErrDurabilityMixed, "")
			return
		}
	case d.State == DurabilityHeldForResolution && d.HeldForResolution != nil:
		if n > 1 {
			v.Fail(path, ErrHeldCarriesWork, "")
			return
		}
		h := d.HeldForResolution
		if h.ExpectedResolutionRevision != 1 {
			v.Fail(path+".expectedResolutionRevision", ErrResolutionRevisionNotOne, fmt.Sprintf("got %d", h.ExpectedResolutionRevision))
		}
	default:
		v.Fail(path+".state", strict.ErrMixedUnion, "durability branch data does not match state "+d.State)
	}
}

func (d CatchUpDurability) toJSON() map[string]any {
	m := map[string]any{"state": d.State}
	if f := d.FinalizationWork; f != nil {
		m["finalizationFenceRevision"] = f.FinalizationFenceRevision
		f.Work.put(m)
	}
	if s := d.SettlementCatchUp; s != nil {
		m["settlementCatchUpFenceRevision"] = s.SettlementCatchUpFenceRevision
		m["workGeneration"] = s.WorkGeneration
		s.Work.Put(m, prefixCatchUpWork)
		m["billingCatchUpValidationOperationId"] = s.BillingCatchUpValidationOperationID
	}
	if h := d.HeldForResolution; h != nil {
		m["finalizationFenceRevision"] = h.FinalizationFenceRevision
		m[fieldCaseRef] = h.ReconciliationCaseRef
		m["reconciliationGeneration"] = h.ReconciliationGeneration
		m["expectedResolutionRevision"] = h.ExpectedResolutionRevision
	}
	return m
}

// ToJSON returns the full JSON form.
func (x *BillingSettlementCatchUpConsumerReceipt) ToJSON() map[string]any {
	m := map[string]any{
		"eventType":                  EventSettlementInputCurrentChanged,
		"eventSchemaVersion":         eventSchemaVersion1,
		"billingReservationId":       x.BillingReservationID,
		"billingAccountId":           x.BillingAccountID,
		"runId":                      x.RunID,
		"runStepId":                  x.RunStepID,
		"executionAttemptId":         x.ExecutionAttemptID,
		"chargeDimensionKey":         x.ChargeDimensionKey,
		"settlementEconomicIdentity": x.EconomicIdentity.toJSON(),
		"eventSettlementInput":       x.EventSettlementInput.toJSON(),
		"committedAt":                strict.FormatTimestamp(x.CommittedAt),
	}
	x.Header.put(m, prefixCatchUpReceipt, route.BillingSettlementCatchUp)
	x.Tenant.put(m)
	out := map[string]any{"kind": x.Outcome.Kind, "inboxRevision": x.Outcome.InboxRevision}
	if x.Outcome.Durability != nil {
		out["durability"] = x.Outcome.Durability.toJSON()
	}
	if x.Outcome.HighestObserved != nil {
		out["highestObservedSettlementInput"] = x.Outcome.HighestObserved.toJSON()
	}
	m["outcome"] = out
	return m
}

func (x *BillingSettlementCatchUpConsumerReceipt) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return catchUpSelf, &x.Receipt
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *BillingSettlementCatchUpConsumerReceipt) Seal() error { return sealObject(x) }
func (x *BillingSettlementCatchUpConsumerReceipt) Digest() (digest.Digest, error) {
	return candidateOf(x)
}
func (x *BillingSettlementCatchUpConsumerReceipt) VerifyDigest() error { return verifyObject(x) }

func (x *BillingSettlementCatchUpConsumerReceipt) ReceiptDestination() route.Destination {
	return route.BillingSettlementCatchUp
}
func (x *BillingSettlementCatchUpConsumerReceipt) ReceiptConsumerName() string {
	return route.BillingSettlementCatchUpConsumer
}
func (x *BillingSettlementCatchUpConsumerReceipt) ReceiptEventType() string {
	return EventSettlementInputCurrentChanged
}
func (x *BillingSettlementCatchUpConsumerReceipt) ReceiptIdentity() map[string]string {
	return identityMap(x.identity())
}

// identity: readBillingSettlementCatchUpConsumerReceipt expects
// Tenant/Account/Reservation/Run/Step/Attempt/Dimension and the snapshot
// five-tuple of the event; all must match. The economic identity is a nested
// object in the event payload, so it is not part of the flat identity map.
func (x *BillingSettlementCatchUpConsumerReceipt) identity() identitySet {
	var s identitySet
	x.Tenant.identity(&s)
	s.req("billingReservationId", x.BillingReservationID)
	s.req("billingAccountId", x.BillingAccountID)
	s.req("runId", x.RunID)
	s.req("runStepId", x.RunStepID)
	s.req("executionAttemptId", x.ExecutionAttemptID)
	s.req("chargeDimensionKey", x.ChargeDimensionKey)
	s.reqQuad(prefixSettlementInputSnapshot, x.EventSettlementInput.Snapshot)
	s.reqInt("settlementInputStateVersion", x.EventSettlementInput.StateVersion)
	return s
}
