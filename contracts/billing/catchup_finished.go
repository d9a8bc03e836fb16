package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindBillingSettlementCatchUpWorkAttemptFinished is the finish of one
// catch-up Work generation.
const KindBillingSettlementCatchUpWorkAttemptFinished = "BillingSettlementCatchUpWorkAttemptFinished@1"

// Finish outcomes (outbox document: transition_applied | already_evaluated
// are not caught_up; they rebaseline the fence and create the successor).
const (
	CatchUpFinishedCaughtUp          = "caught_up"
	CatchUpFinishedTransitionApplied = "transition_applied"
	CatchUpFinishedAlreadyEvaluated  = "already_evaluated"
)

const (
	prefixCatchUpFinished = "billingSettlementCatchUpWorkAttemptFinished"
	prefixSuccessorWork   = "successorBillingSettlementCatchUpWork"
)

var catchUpFinishedSelf = strict.SelfAddressed{Prefix: prefixCatchUpFinished, TimeFields: []string{"finishedAt"}}

// BillingSettlementCatchUpWorkAttemptFinished is
// BillingSettlementCatchUpWorkAttemptFinished@1 — our definition of the one
// finish of a catch-up Work generation, committed with its effect (the
// fence's caught_up, or the transition / rebaseline and the successor Work),
// so a lost response is answered from it and no generation finishes twice.
//
//	billingSettlementCatchUpWorkAttemptFinishedRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	dimension                                  in full
//	billingSettlementCatchUpWork quadruple, workGeneration, billingCatchUpValidationOperationId
//	catchUpValidationReceipt quadruple         Metering's billing_catch_up_fence receipt of the generation
//	outcome = {kind=caught_up}
//	        | {kind=transition_applied; billingSettlementTransition quadruple; toSettlementStateRevision;
//	           rebaselinedInput; successor Work quadruple, generation (= workGeneration + 1), operation}
//	        | {kind=already_evaluated; rebaselinedInput; successor Work quadruple, generation, operation}
//	finishedAt                                 excluded from the digest candidate
type BillingSettlementCatchUpWorkAttemptFinished struct {
	Finished              strict.Quadruple
	Dimension             SettlementDimension
	Work                  strict.Quadruple
	WorkGeneration        int64
	ValidationOperationID string
	ValidationReceipt     strict.Quadruple
	Outcome               string
	// Transition and ToSettlementStateRevision: transition_applied only.
	Transition                strict.Quadruple
	ToSettlementStateRevision int64
	// RebaselinedInput and the successor: transition_applied and already_evaluated.
	RebaselinedInput               SettlementInput
	SuccessorWork                  strict.Quadruple
	SuccessorWorkGeneration        int64
	SuccessorValidationOperationID string
	FinishedAt                     time.Time
}

func (*BillingSettlementCatchUpWorkAttemptFinished) Kind() string {
	return KindBillingSettlementCatchUpWorkAttemptFinished
}
func (f *BillingSettlementCatchUpWorkAttemptFinished) Quad() *strict.Quadruple { return &f.Finished }

// ToJSON returns the full JSON form.
func (f *BillingSettlementCatchUpWorkAttemptFinished) ToJSON() map[string]any {
	out := map[string]any{"kind": f.Outcome}
	if f.Outcome != CatchUpFinishedCaughtUp {
		out["rebaselinedInput"] = f.RebaselinedInput.toJSON()
		f.SuccessorWork.Put(out, prefixSuccessorWork)
		out["successorWorkGeneration"] = f.SuccessorWorkGeneration
		out["successorBillingCatchUpValidationOperationId"] = f.SuccessorValidationOperationID
	}
	if f.Outcome == CatchUpFinishedTransitionApplied {
		f.Transition.Put(out, prefixTransition)
		out["toSettlementStateRevision"] = f.ToSettlementStateRevision
	}
	m := map[string]any{
		"workGeneration":        f.WorkGeneration,
		fieldCatchUpOperationID: f.ValidationOperationID,
		"outcome":               out,
		"finishedAt":            strict.FormatTimestamp(f.FinishedAt),
	}
	f.Dimension.put(m)
	f.Work.Put(m, prefixCatchUpWork)
	f.ValidationReceipt.Put(m, prefixCatchUpValidationReceipt)
	f.Finished.Put(m, prefixCatchUpFinished)
	return m
}

// DecodeBillingSettlementCatchUpWorkAttemptFinished strictly decodes the
// finish, checks its rules and verifies its digest.
func DecodeBillingSettlementCatchUpWorkAttemptFinished(doc []byte) (*BillingSettlementCatchUpWorkAttemptFinished, error) {
	m, err := decodeSettlementMap(KindBillingSettlementCatchUpWorkAttemptFinished, doc)
	if err != nil {
		return nil, err
	}
	o := stlObj(m, "outcome")
	f := &BillingSettlementCatchUpWorkAttemptFinished{
		Finished: stlQuad(m, prefixCatchUpFinished), Dimension: settlementDimensionOf(m), Work: stlQuad(m, prefixCatchUpWork),
		WorkGeneration: stlI64(m, "workGeneration"), ValidationOperationID: stlStr(m, fieldCatchUpOperationID),
		ValidationReceipt: stlQuad(m, prefixCatchUpValidationReceipt), Outcome: stlStr(o, "kind"), FinishedAt: stlTime(m, "finishedAt"),
	}
	if f.Outcome != CatchUpFinishedCaughtUp {
		f.RebaselinedInput = settlementInputOf(stlObj(o, "rebaselinedInput"))
		f.SuccessorWork = stlQuad(o, prefixSuccessorWork)
		f.SuccessorWorkGeneration = stlI64(o, "successorWorkGeneration")
		f.SuccessorValidationOperationID = stlStr(o, "successorBillingCatchUpValidationOperationId")
	}
	if f.Outcome == CatchUpFinishedTransitionApplied {
		f.Transition = stlQuad(o, prefixTransition)
		f.ToSettlementStateRevision = stlI64(o, "toSettlementStateRevision")
	}
	return f, nil
}

func catchUpSuccessorFields() []schema.Field {
	return schema.Fields(
		schema.F("rebaselinedInput", schema.Ref{Def: SettlementInputDef}, "the input the fence now settles (or verified)"),
		stlSelfQuad(prefixSuccessorWork, "the successor BillingSettlementCatchUpWork@1"),
		schema.F("successorWorkGeneration", schema.Int{Min: 2}, "workGeneration + 1"),
		schema.F("successorBillingCatchUpValidationOperationId", schema.UUID{}, "the successor's validation operation"),
	)
}

// CatchUpFinishedDef describes BillingSettlementCatchUpWorkAttemptFinished@1.
var CatchUpFinishedDef = &schema.Def{Name: "BillingSettlementCatchUpWorkAttemptFinishedV1",
	Doc: "BillingSettlementCatchUpWorkAttemptFinished@1: the one finish of a catch-up Work generation (caught_up, or transition_applied / already_evaluated with the successor Work).",
	Type: schema.Object{Fields: schema.Fields(
		stlSelfQuad(prefixCatchUpFinished, "assigned by Billing's repository; excluded from the digest candidate"),
		settlementDimensionFields(),
		stlSelfQuad(prefixCatchUpWork, "the finished generation's BillingSettlementCatchUpWork@1"),
		schema.F("workGeneration", schema.Int{Min: 1}, ""),
		schema.F(fieldCatchUpOperationID, schema.UUID{}, "the finished generation's validation operation"),
		stlRefQuad(prefixCatchUpValidationReceipt, "Metering's billing_catch_up_fence receipt of the generation"),
		schema.F("outcome", schema.Ref{Def: catchUpFinishedOutcomeDef}, ""),
		schema.F("finishedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var catchUpFinishedOutcomeDef = &schema.Def{Name: "BillingSettlementCatchUpFinishedOutcomeV1",
	Doc: "caught_up (no successor), or a rebaseline with its successor Work (transition_applied also names the transition).",
	Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
		{Value: CatchUpFinishedCaughtUp},
		{Value: CatchUpFinishedTransitionApplied, Fields: schema.Fields(
			stlSelfQuad(prefixTransition, "the committed BillingSettlementTransition@1"),
			schema.F("toSettlementStateRevision", schema.Int{Min: 2}, ""),
			catchUpSuccessorFields(),
		)},
		{Value: CatchUpFinishedAlreadyEvaluated, Fields: catchUpSuccessorFields()},
	}}}

// catchUpFinishedRules: the successor is the next generation.
func catchUpFinishedRules(m map[string]any) error {
	if err := checkSettlementDimension(m); err != nil {
		return err
	}
	o := stlObj(m, "outcome")
	if stlStr(o, "kind") != CatchUpFinishedCaughtUp && stlI64(o, "successorWorkGeneration") != stlI64(m, "workGeneration")+1 {
		return fmt.Errorf("%w: successor generation %d is not %d + 1", ErrCatchUpRule, stlI64(o, "successorWorkGeneration"), stlI64(m, "workGeneration"))
	}
	return nil
}
