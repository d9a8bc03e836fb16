package billing

import (
	"fmt"
	"math/big"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Transition kinds (ADR-031: a negative difference appends a refund, an
// approvable positive difference an adjustment, a positive difference that
// cannot be handled automatically a LateSettlementExposure@1).
const (
	TransitionRefund                 = "refund"
	TransitionAdjustment             = "adjustment"
	TransitionLateSettlementExposure = "late_settlement_exposure"
)

// Causation kinds: the first transition of a dimension is caused by the
// finalization, every later one by the transition that produced its from
// revision.
const (
	TransitionCausedByFinalization = "finalization"
	TransitionCausedByTransition   = "settlement_transition"
	// TransitionCausedByLateResult: the from revision was produced by a
	// late settlement command (LateSettlementCommandResult@1 moves the
	// dimension's settled state one revision, ADR-031 F → T → Late Result
	// → T), so the next transition names that result as its predecessor.
	TransitionCausedByLateResult = "late_settlement_command_result"
)

const (
	prefixTransition                = "billingSettlementTransition"
	prefixPredecessorTransition     = "predecessorBillingSettlementTransition"
	prefixPredecessorLateResult     = "predecessorLateSettlementCommandResult"
	prefixFinalizationCommitted     = "billingFinalizationCommitted"
	prefixSettlementValidationRcpt  = "settlementInputValidationReceipt"
	fieldTransitionBasisAlgorithm   = "settlementBasisDigestAlgorithmVersion"
	fieldTransitionBasisDigest      = "settlementBasisDigest"
	fieldTransitionValidationOpID   = "validationOperationId"
	fieldTransitionLogicalOperation = "logicalOperationId"
)

var transitionSelf = strict.SelfAddressed{Prefix: prefixTransition, TimeFields: []string{"committedAt"}}

// BillingSettlementTransition is BillingSettlementTransition@1 — our
// definition of one append-only settlement step of a dimension after its
// successful finalization (BI-2). Finalization establishes settlement state
// revision 1; every transition moves from → from+1 and never edits the base
// settlement.
//
//	billingSettlementTransitionRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	dimension (reservation, account, run, step, attempt, charge dimension,
//	  settlementDimensionId, economic identity)   carried in full, consumers never look it up
//	transitionKind = refund | adjustment | late_settlement_exposure
//	lateEligibleDisposition = reconcile_before_charge   the frozen policy the kind was chosen under
//	fromSettlementStateRevision / toSettlementStateRevision = from + 1   contiguous per dimension
//	settledAmountBefore / targetAmount / settledAmountAfter / transitionAmount
//	  refund:     target < before, after = target, amount = before − target
//	  adjustment: target > before, after = target, amount = target − before
//	  late_settlement_exposure: target > before, after = before (never charged), amount = target − before
//	previousSettlementInput   the five-tuple the from revision settled
//	settlementInput           the newer current five-tuple this transition consumes (higher state version)
//	settlementInputValidationReceipt quadruple    Metering's post_finalization_transition current receipt
//	causation = {kind=finalization; billingFinalizationCommitted quadruple}           from = 1
//	          | {kind=settlement_transition; predecessorBillingSettlementTransition quadruple;
//	             predecessorToSettlementStateRevision = from}                          from > 1
//	          | {kind=late_settlement_command_result; predecessorLateSettlementCommandResult quadruple;
//	             predecessorToSettlementStateRevision = from}                          from > 2
//	logicalOperationId, settlementBasisDigest pair, validationOperationId   as in the event (derivation
//	  billing_settlement_transition_validation_operation@1), so a stale validation is never reused
//	committedAt               excluded from the digest candidate
type BillingSettlementTransition struct {
	Transition                  strict.Quadruple
	Dimension                   SettlementDimension
	TransitionKind              string
	FromSettlementStateRevision int64
	SettledAmountBefore         string
	TargetAmount                string
	SettledAmountAfter          string
	TransitionAmount            string
	PreviousSettlementInput     SettlementInput
	SettlementInput             SettlementInput
	ValidationReceipt           strict.Quadruple
	CausationKind               string
	// CausedBy is the committed finalization fact (causation finalization)
	// or the predecessor transition (causation settlement_transition).
	CausedBy           strict.Quadruple
	LogicalOperationID string
	SettlementBasis    digest.Digest
	CommittedAt        time.Time
}

func (*BillingSettlementTransition) Kind() string              { return KindBillingSettlementTransition }
func (t *BillingSettlementTransition) Quad() *strict.Quadruple { return &t.Transition }

// ToSettlementStateRevision is always from + 1.
func (t *BillingSettlementTransition) ToSettlementStateRevision() int64 {
	return t.FromSettlementStateRevision + 1
}

// ValidationOperationID is the derived Validation Operation the event carries.
func (t *BillingSettlementTransition) ValidationOperationID() string {
	d := t.Dimension
	return envelope.SettlementTransitionValidationOperationID(t.LogicalOperationID, d.BillingReservationID, d.RunStepID, d.ExecutionAttemptID,
		d.ChargeDimensionKey, t.FromSettlementStateRevision, string(t.SettlementBasis.Algorithm), t.SettlementBasis.Value)
}

// ToJSON returns the full JSON form.
func (t *BillingSettlementTransition) ToJSON() map[string]any {
	m := map[string]any{
		"transitionKind":                t.TransitionKind,
		"lateEligibleDisposition":       LateEligibleDispositionReconcileBeforeCharge,
		"fromSettlementStateRevision":   t.FromSettlementStateRevision,
		"toSettlementStateRevision":     t.ToSettlementStateRevision(),
		"settledAmountBefore":           t.SettledAmountBefore,
		"targetAmount":                  t.TargetAmount,
		"settledAmountAfter":            t.SettledAmountAfter,
		"transitionAmount":              t.TransitionAmount,
		"previousSettlementInput":       t.PreviousSettlementInput.toJSON(),
		"settlementInput":               t.SettlementInput.toJSON(),
		fieldTransitionLogicalOperation: t.LogicalOperationID,
		fieldTransitionBasisAlgorithm:   string(t.SettlementBasis.Algorithm),
		fieldTransitionBasisDigest:      t.SettlementBasis.Value,
		fieldTransitionValidationOpID:   t.ValidationOperationID(),
		"committedAt":                   strict.FormatTimestamp(t.CommittedAt),
		"causation":                     t.causationJSON(),
	}
	t.Dimension.put(m)
	t.ValidationReceipt.Put(m, prefixSettlementValidationRcpt)
	t.Transition.Put(m, prefixTransition)
	return m
}

func (t *BillingSettlementTransition) causationJSON() map[string]any {
	c := map[string]any{"kind": t.CausationKind}
	switch t.CausationKind {
	case TransitionCausedByFinalization:
		t.CausedBy.Put(c, prefixFinalizationCommitted)
	case TransitionCausedByTransition:
		t.CausedBy.Put(c, prefixPredecessorTransition)
		c["predecessorToSettlementStateRevision"] = t.FromSettlementStateRevision
	case TransitionCausedByLateResult:
		t.CausedBy.Put(c, prefixPredecessorLateResult)
		c["predecessorToSettlementStateRevision"] = t.FromSettlementStateRevision
	}
	return c
}

// DecodeBillingSettlementTransition strictly decodes the transition, checks
// its rules and verifies its digest.
func DecodeBillingSettlementTransition(doc []byte) (*BillingSettlementTransition, error) {
	m, err := decodeSettlementMap(KindBillingSettlementTransition, doc)
	if err != nil {
		return nil, err
	}
	c := stlObj(m, "causation")
	t := &BillingSettlementTransition{
		Transition: stlQuad(m, prefixTransition), Dimension: settlementDimensionOf(m), TransitionKind: stlStr(m, "transitionKind"),
		FromSettlementStateRevision: stlI64(m, "fromSettlementStateRevision"),
		SettledAmountBefore:         stlStr(m, "settledAmountBefore"), TargetAmount: stlStr(m, "targetAmount"),
		SettledAmountAfter: stlStr(m, "settledAmountAfter"), TransitionAmount: stlStr(m, "transitionAmount"),
		PreviousSettlementInput: settlementInputOf(stlObj(m, "previousSettlementInput")), SettlementInput: settlementInputOf(stlObj(m, "settlementInput")),
		ValidationReceipt: stlQuad(m, prefixSettlementValidationRcpt), CausationKind: stlStr(c, "kind"),
		LogicalOperationID: stlStr(m, fieldTransitionLogicalOperation), SettlementBasis: stlDigest(m, fieldTransitionBasisAlgorithm, fieldTransitionBasisDigest),
		CommittedAt: stlTime(m, "committedAt"),
	}
	switch t.CausationKind {
	case TransitionCausedByFinalization:
		t.CausedBy = stlQuad(c, prefixFinalizationCommitted)
	case TransitionCausedByLateResult:
		t.CausedBy = stlQuad(c, prefixPredecessorLateResult)
	default:
		t.CausedBy = stlQuad(c, prefixPredecessorTransition)
	}
	return t, nil
}

// TransitionDef describes BillingSettlementTransition@1.
var TransitionDef = &schema.Def{Name: "BillingSettlementTransitionV1",
	Doc: "BillingSettlementTransition@1: one append-only settlement step of a dimension after its successful finalization (refund | adjustment | late_settlement_exposure), from → from+1.",
	Type: schema.Object{Fields: schema.Fields(
		stlSelfQuad(prefixTransition, "assigned by Billing's repository; excluded from the digest candidate"),
		settlementDimensionFields(),
		schema.F("transitionKind", schema.Enum{Values: []string{TransitionRefund, TransitionAdjustment, TransitionLateSettlementExposure}}, ""),
		schema.F("lateEligibleDisposition", schema.Literal{Value: LateEligibleDispositionReconcileBeforeCharge}, "first phase: a positive difference after release is never charged automatically"),
		schema.F("fromSettlementStateRevision", schema.Int{Min: 1}, "the successful finalization establishes revision 1"),
		schema.F("toSettlementStateRevision", schema.Int{Min: 2}, "fromSettlementStateRevision + 1"),
		schema.F("settledAmountBefore", schema.AmountText, "settled amount of the dimension at the from revision"),
		schema.F("targetAmount", schema.AmountText, "target net amount of the newer settlement input"),
		schema.F("settledAmountAfter", schema.AmountText, "settled amount at the to revision (unchanged for late_settlement_exposure)"),
		schema.F("transitionAmount", schema.AmountText, "absolute difference between target and before"),
		schema.F("previousSettlementInput", schema.Ref{Def: SettlementInputDef}, "the input the from revision settled"),
		schema.F("settlementInput", schema.Ref{Def: SettlementInputDef}, "the newer current input this transition consumes"),
		stlRefQuad(prefixSettlementValidationRcpt, "Metering's post_finalization_transition current validation receipt"),
		schema.F("causation", schema.Ref{Def: transitionCausationDef}, ""),
		schema.F(fieldTransitionLogicalOperation, schema.UUID{}, "the stable logical operation of the catch-up work"),
		schema.DigestPairFields(fieldTransitionBasisAlgorithm, fieldTransitionBasisDigest, "digest of the full transition basis"),
		schema.F(fieldTransitionValidationOpID, schema.UUID{}, "derivation billing_settlement_transition_validation_operation@1"),
		schema.F("committedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var transitionCausationDef = &schema.Def{Name: "BillingSettlementTransitionCausationV1",
	Doc: "What the from revision came from: the committed finalization (from = 1), the direct predecessor transition (from > 1), or the late settlement command result that produced it (from > 2).",
	Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
		{Value: TransitionCausedByFinalization, Fields: stlRefQuad(prefixFinalizationCommitted, "BillingFinalizationCommitted@1")},
		{Value: TransitionCausedByTransition, Fields: schema.Fields(
			stlRefQuad(prefixPredecessorTransition, "the direct predecessor BillingSettlementTransition@1"),
			schema.F("predecessorToSettlementStateRevision", schema.Int{Min: 2}, "equals fromSettlementStateRevision"),
		)},
		{Value: TransitionCausedByLateResult, Fields: schema.Fields(
			stlRefQuad(prefixPredecessorLateResult, "the LateSettlementCommandResult@1 whose to revision is this from revision"),
			schema.F("predecessorToSettlementStateRevision", schema.Int{Min: 3}, "equals fromSettlementStateRevision"),
		)},
	}}}

// transitionRules: contiguous revisions, causation matching the from
// revision, amounts adding up exactly for the kind, an advancing input, and
// the derived identifiers recomputing.
func transitionRules(m map[string]any) error {
	if err := checkSettlementDimension(m); err != nil {
		return err
	}
	from, to := stlI64(m, "fromSettlementStateRevision"), stlI64(m, "toSettlementStateRevision")
	if to != from+1 {
		return fmt.Errorf("%w: toSettlementStateRevision %d is not %d + 1", ErrTransitionRule, to, from)
	}
	c := stlObj(m, "causation")
	switch kind := stlStr(c, "kind"); {
	case kind == TransitionCausedByFinalization && from != 1:
		return fmt.Errorf("%w: causation finalization needs from revision 1, got %d", ErrTransitionRule, from)
	case kind != TransitionCausedByFinalization && from == 1:
		return fmt.Errorf("%w: from revision 1 is caused by the finalization", ErrTransitionRule)
	case kind != TransitionCausedByFinalization && stlI64(c, "predecessorToSettlementStateRevision") != from:
		return fmt.Errorf("%w: predecessor to revision %d is not from revision %d", ErrTransitionRule, stlI64(c, "predecessorToSettlementStateRevision"), from)
	}
	prev, next := settlementInputOf(stlObj(m, "previousSettlementInput")), settlementInputOf(stlObj(m, "settlementInput"))
	if next.StateVersion <= prev.StateVersion {
		return fmt.Errorf("%w: settlement input state version %d does not advance past %d", ErrTransitionRule, next.StateVersion, prev.StateVersion)
	}
	if err := checkTransitionAmounts(stlStr(m, "transitionKind"), stlStr(m, "settledAmountBefore"), stlStr(m, "targetAmount"),
		stlStr(m, "settledAmountAfter"), stlStr(m, "transitionAmount")); err != nil {
		return err
	}
	want := envelope.SettlementTransitionValidationOperationID(stlStr(m, fieldTransitionLogicalOperation), stlStr(m, "billingReservationId"),
		stlStr(m, "runStepId"), stlStr(m, "executionAttemptId"), stlStr(m, "chargeDimensionKey"), from,
		stlStr(m, fieldTransitionBasisAlgorithm), stlStr(m, fieldTransitionBasisDigest))
	if got := stlStr(m, fieldTransitionValidationOpID); got != want {
		return fmt.Errorf("%w: validationOperationId %s (want %s)", ErrSettlementDerivedID, got, want)
	}
	return nil
}

func checkTransitionAmounts(kind, beforeText, targetText, afterText, amountText string) error {
	before, target, after, amount := parseAmount(beforeText), parseAmount(targetText), parseAmount(afterText), parseAmount(amountText)
	if before == nil || target == nil || after == nil || amount == nil {
		return fmt.Errorf("%w: amounts are not decimals", ErrTransitionRule)
	}
	cmp := target.Cmp(before)
	diff := new(big.Rat).Sub(target, before)
	switch kind {
	case TransitionRefund:
		if cmp >= 0 || after.Cmp(target) != 0 || amount.Cmp(new(big.Rat).Neg(diff)) != 0 {
			return fmt.Errorf("%w: refund needs target < before, after = target, amount = before - target", ErrTransitionRule)
		}
	case TransitionAdjustment:
		if cmp <= 0 || after.Cmp(target) != 0 || amount.Cmp(diff) != 0 {
			return fmt.Errorf("%w: adjustment needs target > before, after = target, amount = target - before", ErrTransitionRule)
		}
	case TransitionLateSettlementExposure:
		if cmp <= 0 || after.Cmp(before) != 0 || amount.Cmp(diff) != 0 {
			return fmt.Errorf("%w: late_settlement_exposure needs target > before, after = before (never charged), amount = target - before", ErrTransitionRule)
		}
	}
	return nil
}

// TransitionKindFor chooses the kind of a transition from the settled
// amount and the new target under reconcile_before_charge: a negative
// difference is a refund, a positive one after release an exposure; no
// difference is no transition (ok=false). Adjustment is never chosen
// automatically in the first phase: it needs a funding decision.
func TransitionKindFor(settledBefore, target string) (kind string, amount string, ok bool, err error) {
	before, t := parseAmount(settledBefore), parseAmount(target)
	if before == nil || t == nil || before.Sign() < 0 || t.Sign() < 0 {
		return "", "", false, fmt.Errorf("%w: amounts %q, %q are not non-negative decimals", ErrTransitionRule, settledBefore, target)
	}
	diff := new(big.Rat).Sub(t, before)
	switch diff.Sign() {
	case -1:
		return TransitionRefund, FormatSettlementAmount(new(big.Rat).Neg(diff)), true, nil
	case 1:
		return TransitionLateSettlementExposure, FormatSettlementAmount(diff), true, nil
	}
	return "", "", false, nil
}
