package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Catch-up fence coordination states (outbox document): a fence always has
// an active Work until a successor's own current receipt proves it caught up.
const (
	CatchUpPendingVerification     = "pending_verification"
	CatchUpCaughtUp                = "caught_up"
	CatchUpBlockedOnOwnerConflict  = "blocked_on_owner_conflict"
	CatchUpWatermarkNone           = "none"
	CatchUpWatermarkObserved       = "observed"
	prefixCatchUpFence             = "billingSettlementCatchUpFence"
	prefixCatchUpValidationReceipt = "catchUpValidationReceipt"
	prefixCatchUpBlocked           = "billingSettlementCatchUpWorkAttemptBlocked"
)

var catchUpFenceSelf = strict.SelfAddressed{Prefix: prefixCatchUpFence, TimeFields: []string{"recordedAt"}}

// CatchUpWatermark is the dimension's SettlementInputWakeupWatermark: the
// highest settlement input event the consumer accepted (monotonic).
type CatchUpWatermark struct {
	Observed      bool
	Input         SettlementInput
	InboxRevision int64
}

// BillingSettlementCatchUpFence is BillingSettlementCatchUpFence@1 — our
// definition of one revision of a dimension's catch-up fence, the boundary
// DTO Billing shows for it (the rows are the truth; this is what a read or a
// receipt binds).
//
//	billingSettlementCatchUpFenceRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	dimension                              in full
//	settlementCatchUpFenceRevision         +1 on every fence change
//	settlementStateRevision                the settled state (1 = finalization)
//	lastEvaluatedInput                     the input that state settled or was verified against
//	settlementInputWatermark = {state=none} | {state=observed; five-tuple; inboxRevision}
//	coordinationState =
//	    {state=pending_verification; workGeneration; Work quadruple; billingCatchUpValidationOperationId}
//	  | {state=caught_up; the same; catchUpValidationReceipt quadruple}   watermark not ahead
//	  | {state=blocked_on_owner_conflict; the same; BillingSettlementCatchUpWorkAttemptBlocked@1 quadruple}
//	recordedAt                             excluded from the digest candidate
type BillingSettlementCatchUpFence struct {
	Fence                          strict.Quadruple
	Dimension                      SettlementDimension
	SettlementCatchUpFenceRevision int64
	SettlementStateRevision        int64
	LastEvaluatedInput             SettlementInput
	Watermark                      CatchUpWatermark
	CoordinationState              string
	WorkGeneration                 int64
	Work                           strict.Quadruple
	ValidationOperationID          string
	// Evidence is the catch-up validation receipt (caught_up) or the
	// blocked fact (blocked_on_owner_conflict); empty when pending.
	Evidence   strict.Quadruple
	RecordedAt time.Time
}

func (*BillingSettlementCatchUpFence) Kind() string              { return KindBillingSettlementCatchUpFence }
func (f *BillingSettlementCatchUpFence) Quad() *strict.Quadruple { return &f.Fence }

// ToJSON returns the full JSON form.
func (f *BillingSettlementCatchUpFence) ToJSON() map[string]any {
	wm := map[string]any{"state": CatchUpWatermarkNone}
	if f.Watermark.Observed {
		wm = f.Watermark.Input.toJSON()
		wm["state"] = CatchUpWatermarkObserved
		wm["inboxRevision"] = f.Watermark.InboxRevision
	}
	cs := map[string]any{"state": f.CoordinationState, "workGeneration": f.WorkGeneration, fieldCatchUpOperationID: f.ValidationOperationID}
	f.Work.Put(cs, prefixCatchUpWork)
	switch f.CoordinationState {
	case CatchUpCaughtUp:
		f.Evidence.Put(cs, prefixCatchUpValidationReceipt)
	case CatchUpBlockedOnOwnerConflict:
		f.Evidence.Put(cs, prefixCatchUpBlocked)
	}
	m := map[string]any{
		"settlementCatchUpFenceRevision": f.SettlementCatchUpFenceRevision,
		"settlementStateRevision":        f.SettlementStateRevision,
		"lastEvaluatedInput":             f.LastEvaluatedInput.toJSON(),
		"settlementInputWatermark":       wm,
		"coordinationState":              cs,
		"recordedAt":                     strict.FormatTimestamp(f.RecordedAt),
	}
	f.Dimension.put(m)
	f.Fence.Put(m, prefixCatchUpFence)
	return m
}

// DecodeBillingSettlementCatchUpFence strictly decodes the fence revision,
// checks its rules and verifies its digest.
func DecodeBillingSettlementCatchUpFence(doc []byte) (*BillingSettlementCatchUpFence, error) {
	m, err := decodeSettlementMap(KindBillingSettlementCatchUpFence, doc)
	if err != nil {
		return nil, err
	}
	wm, cs := stlObj(m, "settlementInputWatermark"), stlObj(m, "coordinationState")
	f := &BillingSettlementCatchUpFence{
		Fence: stlQuad(m, prefixCatchUpFence), Dimension: settlementDimensionOf(m),
		SettlementCatchUpFenceRevision: stlI64(m, "settlementCatchUpFenceRevision"), SettlementStateRevision: stlI64(m, "settlementStateRevision"),
		LastEvaluatedInput: settlementInputOf(stlObj(m, "lastEvaluatedInput")),
		CoordinationState:  stlStr(cs, "state"), WorkGeneration: stlI64(cs, "workGeneration"), Work: stlQuad(cs, prefixCatchUpWork),
		ValidationOperationID: stlStr(cs, fieldCatchUpOperationID), RecordedAt: stlTime(m, "recordedAt"),
	}
	if stlStr(wm, "state") == CatchUpWatermarkObserved {
		f.Watermark = CatchUpWatermark{Observed: true, Input: settlementInputOf(wm), InboxRevision: stlI64(wm, "inboxRevision")}
	}
	switch f.CoordinationState {
	case CatchUpCaughtUp:
		f.Evidence = stlQuad(cs, prefixCatchUpValidationReceipt)
	case CatchUpBlockedOnOwnerConflict:
		f.Evidence = stlQuad(cs, prefixCatchUpBlocked)
	}
	return f, nil
}

func catchUpActiveWorkFields() []schema.Field {
	return schema.Fields(
		schema.F("workGeneration", schema.Int{Min: 1}, ""),
		stlSelfQuad(prefixCatchUpWork, "BillingSettlementCatchUpWork@1 of that generation"),
		schema.F(fieldCatchUpOperationID, schema.UUID{}, "the generation's validation operation"),
	)
}

// CatchUpFenceDef describes BillingSettlementCatchUpFence@1.
var CatchUpFenceDef = &schema.Def{Name: "BillingSettlementCatchUpFenceV1",
	Doc: "BillingSettlementCatchUpFence@1: one revision of a settlement dimension's catch-up fence, its watermark and its coordination state.",
	Type: schema.Object{Fields: schema.Fields(
		stlSelfQuad(prefixCatchUpFence, "assigned by Billing's repository (one per revision); excluded from the digest candidate"),
		settlementDimensionFields(),
		schema.F("settlementCatchUpFenceRevision", schema.Int{Min: 1}, ""),
		schema.F("settlementStateRevision", schema.Int{Min: 1}, "1 is the finalization"),
		schema.F("lastEvaluatedInput", schema.Ref{Def: SettlementInputDef}, ""),
		schema.F("settlementInputWatermark", schema.Ref{Def: catchUpWatermarkDef}, ""),
		schema.F("coordinationState", schema.Ref{Def: catchUpCoordinationDef}, ""),
		schema.F("recordedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var catchUpWatermarkDef = &schema.Def{Name: "BillingSettlementCatchUpWatermarkV1",
	Doc: "The dimension's settlement input wakeup watermark: none, or the highest input event accepted.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: CatchUpWatermarkNone},
		{Value: CatchUpWatermarkObserved, Fields: schema.Fields(
			stlRefQuad(prefixSettlementInputSnapshot, "highest observed SettlementInputSnapshot@1"),
			schema.F("settlementInputStateVersion", schema.Int{Min: 1}, ""),
			schema.F("inboxRevision", schema.Int{Min: 1}, "+1 per accepted advance"),
		)},
	}}}

var catchUpCoordinationDef = &schema.Def{Name: "BillingSettlementCatchUpCoordinationV1",
	Doc: "The fence's coordination state; every branch binds the generation's Work and validation operation.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: CatchUpPendingVerification, Fields: catchUpActiveWorkFields()},
		{Value: CatchUpCaughtUp, Fields: schema.Fields(catchUpActiveWorkFields(),
			stlRefQuad(prefixCatchUpValidationReceipt, "Metering's billing_catch_up_fence current receipt of that generation"))},
		{Value: CatchUpBlockedOnOwnerConflict, Fields: schema.Fields(catchUpActiveWorkFields(),
			stlRefQuad(prefixCatchUpBlocked, "BillingSettlementCatchUpWorkAttemptBlocked@1"))},
	}}}

// catchUpFenceRules: a caught_up fence's watermark is not ahead of the
// evaluated input.
func catchUpFenceRules(m map[string]any) error {
	if err := checkSettlementDimension(m); err != nil {
		return err
	}
	wm, cs := stlObj(m, "settlementInputWatermark"), stlObj(m, "coordinationState")
	last := settlementInputOf(stlObj(m, "lastEvaluatedInput"))
	if stlStr(cs, "state") == CatchUpCaughtUp && stlStr(wm, "state") == CatchUpWatermarkObserved {
		if w := settlementInputOf(wm); w.StateVersion > last.StateVersion {
			return fmt.Errorf("%w: caught_up while the watermark (state version %d) is ahead of %d", ErrCatchUpRule, w.StateVersion, last.StateVersion)
		}
	}
	return nil
}
