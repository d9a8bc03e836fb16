package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// DerivationLateSettlementExposure names the derivation of a
// LateSettlementExposure@1 id: one exposure per dimension and settlement
// state revision, so a replayed transition finds the same exposure.
const DerivationLateSettlementExposure = "late_settlement_exposure@1"

// Exposure literals: the exposure is recorded open and its automatic charge
// blocked; its case request is requested (the Operations case identity
// Billing reserved, issue 32) or not_requested (a Billing built without
// Operations' case identities: the exposure stays visible, with no case).
const (
	ExposureStateOpen            = "open"
	ExposureAutomaticChargeBlock = "blocked"
	ExposureCaseNotRequested     = "not_requested"
	ExposureCaseRequested        = "requested"
	prefixLateCaseIdentity       = "lateSettlementCaseIdentityReservation"
)

// ExposureCase is the Operations late settlement case an exposure asks for:
// the case generation of its dimension and the identity Operations reserved
// (LateSettlementCaseIdentityReservation@1, contracts/reconciliation).
type ExposureCase struct {
	ReconciliationCaseRef  string
	CaseGeneration         int64
	Identity               strict.Quadruple
	CaseRequestOperationID string
}

const prefixExposure = "lateSettlementExposure"

var exposureSelf = strict.SelfAddressed{Prefix: prefixExposure, TimeFields: []string{"recordedAt"}}

// LateSettlementExposureID derives the exposure id of a dimension's
// settlement state revision (the transition's to revision).
func LateSettlementExposureID(settlementDimensionID string, settlementStateRevision int64) string {
	return envelope.DeriveID(DerivationLateSettlementExposure, map[string]any{
		"settlementDimensionId":   settlementDimensionID,
		"settlementStateRevision": settlementStateRevision,
	})
}

// LateSettlementExposure is LateSettlementExposure@1 — our definition of the
// Billing-owned record of a positive difference after the reservation was
// released (BI-2, reconcile_before_charge): visible, blocked, never charged
// automatically and never a negative balance.
//
//	lateSettlementExposureRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	lateSettlementExposureId     derivation late_settlement_exposure@1 (dimension, state revision)
//	dimension                    in full
//	billingSettlementTransition quadruple   the late_settlement_exposure transition that recorded it
//	settlementStateRevision      the transition's to revision
//	settlementInput              the five-tuple whose target revealed the difference
//	exposureAmount               the positive difference (> 0)
//	lateEligibleDisposition = reconcile_before_charge
//	exposureState = open, automaticCharge = blocked
//	caseRequest = {state=requested; reconciliationCaseRef, caseGeneration,
//	               lateSettlementCaseIdentityReservation quadruple, caseRequestOperationId}
//	            | {state=not_requested}   (no Operations case identities wired)
//	recordedAt                   excluded from the digest candidate
type LateSettlementExposure struct {
	Exposure                strict.Quadruple
	Dimension               SettlementDimension
	Transition              strict.Quadruple
	SettlementStateRevision int64
	SettlementInput         SettlementInput
	ExposureAmount          string
	// Case is the requested case (nil: not_requested).
	Case       *ExposureCase
	RecordedAt time.Time
}

func (*LateSettlementExposure) Kind() string              { return KindLateSettlementExposure }
func (e *LateSettlementExposure) Quad() *strict.Quadruple { return &e.Exposure }

// ExposureID is the derived lateSettlementExposureId.
func (e *LateSettlementExposure) ExposureID() string {
	return LateSettlementExposureID(e.Dimension.SettlementDimensionID(), e.SettlementStateRevision)
}

// ToJSON returns the full JSON form.
func (e *LateSettlementExposure) ToJSON() map[string]any {
	m := map[string]any{
		"lateSettlementExposureId": e.ExposureID(),
		"settlementStateRevision":  e.SettlementStateRevision,
		"settlementInput":          e.SettlementInput.toJSON(),
		"exposureAmount":           e.ExposureAmount,
		"lateEligibleDisposition":  LateEligibleDispositionReconcileBeforeCharge,
		"exposureState":            ExposureStateOpen,
		"automaticCharge":          ExposureAutomaticChargeBlock,
		"caseRequest":              map[string]any{"state": ExposureCaseNotRequested},
		"recordedAt":               strict.FormatTimestamp(e.RecordedAt),
	}
	if c := e.Case; c != nil {
		cr := map[string]any{"state": ExposureCaseRequested, "reconciliationCaseRef": c.ReconciliationCaseRef,
			"caseGeneration": c.CaseGeneration, "caseRequestOperationId": c.CaseRequestOperationID}
		c.Identity.Put(cr, prefixLateCaseIdentity)
		m["caseRequest"] = cr
	}
	e.Dimension.put(m)
	e.Transition.Put(m, prefixTransition)
	e.Exposure.Put(m, prefixExposure)
	return m
}

// DecodeLateSettlementExposure strictly decodes the exposure, checks its
// rules and verifies its digest.
func DecodeLateSettlementExposure(doc []byte) (*LateSettlementExposure, error) {
	m, err := decodeSettlementMap(KindLateSettlementExposure, doc)
	if err != nil {
		return nil, err
	}
	e := &LateSettlementExposure{
		Exposure: stlQuad(m, prefixExposure), Dimension: settlementDimensionOf(m), Transition: stlQuad(m, prefixTransition),
		SettlementStateRevision: stlI64(m, "settlementStateRevision"), SettlementInput: settlementInputOf(stlObj(m, "settlementInput")),
		ExposureAmount: stlStr(m, "exposureAmount"), RecordedAt: stlTime(m, "recordedAt"),
	}
	if cr := stlObj(m, "caseRequest"); stlStr(cr, "state") == ExposureCaseRequested {
		e.Case = &ExposureCase{ReconciliationCaseRef: stlStr(cr, "reconciliationCaseRef"), CaseGeneration: stlI64(cr, "caseGeneration"),
			Identity: stlQuad(cr, prefixLateCaseIdentity), CaseRequestOperationID: stlStr(cr, "caseRequestOperationId")}
	}
	return e, nil
}

// ExposureDef describes LateSettlementExposure@1.
var ExposureDef = &schema.Def{Name: "LateSettlementExposureV1",
	Doc: "LateSettlementExposure@1: a positive settlement difference after the reservation was released, recorded open and blocked (reconcile_before_charge), never charged automatically.",
	Type: schema.Object{Fields: schema.Fields(
		stlSelfQuad(prefixExposure, "assigned by Billing's repository; excluded from the digest candidate"),
		schema.F("lateSettlementExposureId", schema.UUID{}, "derivation late_settlement_exposure@1 over (settlementDimensionId, settlementStateRevision)"),
		settlementDimensionFields(),
		stlSelfQuad(prefixTransition, "the late_settlement_exposure BillingSettlementTransition@1 that recorded it"),
		schema.F("settlementStateRevision", schema.Int{Min: 2}, "the transition's to revision"),
		schema.F("settlementInput", schema.Ref{Def: SettlementInputDef}, "the input whose target revealed the difference"),
		schema.F("exposureAmount", schema.AmountText, "the positive difference, not charged"),
		schema.F("lateEligibleDisposition", schema.Literal{Value: LateEligibleDispositionReconcileBeforeCharge}, ""),
		schema.F("exposureState", schema.Literal{Value: ExposureStateOpen}, "resolution comes with the case command chain"),
		schema.F("automaticCharge", schema.Literal{Value: ExposureAutomaticChargeBlock}, "never charged automatically, never a negative balance"),
		schema.F("caseRequest", schema.Ref{Def: exposureCaseRequestDef}, ""),
		schema.F("recordedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var exposureCaseRequestDef = &schema.Def{Name: "LateSettlementExposureCaseRequestV1",
	Doc: "The Operations late settlement case the exposure asks for (requested), or none when Billing runs without Operations' case identities (not_requested).",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: ExposureCaseRequested, Fields: schema.Fields(
			schema.F("reconciliationCaseRef", schema.RefText, "the case ref Operations reserved for the dimension's case generation"),
			schema.F("caseGeneration", schema.Int{Min: 1}, ""),
			schema.Quad(prefixLateCaseIdentity, "LateSettlementCaseIdentityReservation@1"),
			schema.F("caseRequestOperationId", schema.UUID{}, "the operation of the identity reservation"),
		)},
		{Value: ExposureCaseNotRequested},
	}}}

// exposureRules: the id recomputes and the amount is positive.
func exposureRules(m map[string]any) error {
	if err := checkSettlementDimension(m); err != nil {
		return err
	}
	want := LateSettlementExposureID(stlStr(m, "settlementDimensionId"), stlI64(m, "settlementStateRevision"))
	if got := stlStr(m, "lateSettlementExposureId"); got != want {
		return fmt.Errorf("%w: lateSettlementExposureId %s (want %s)", ErrSettlementDerivedID, got, want)
	}
	if a := parseAmount(stlStr(m, "exposureAmount")); a == nil || a.Sign() <= 0 {
		return fmt.Errorf("%w: exposureAmount %q is not positive", ErrExposureRule, stlStr(m, "exposureAmount"))
	}
	return nil
}
