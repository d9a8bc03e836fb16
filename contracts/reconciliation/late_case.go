package reconciliation

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// The late settlement command chain (ADR-031 "终局后变化采用追加式
// Transition", issue 32 part 2): the only way a LateSettlementExposure@1 is
// charged. Its objects mirror the finalization resolution chain's, under
// their own kinds, audience and role, so a grant, approval or activation of
// one chain never satisfies the other.
const (
	KindLateCommandRequest    = "LateSettlementCommandRequest@1"
	KindLateImpactPreview     = "LateSettlementCommandImpactPreview@1"
	KindLateApproval          = "LateSettlementCommandApproval@1"
	KindLateJitActivation     = "LateSettlementCommandJitActivation@1"
	KindLateCandidate         = "LateSettlementCommandCandidate@1"
	KindLateDecision          = "LateSettlementCommandDecision@1"
	KindLateGrantClaims       = "LateSettlementCommandGrantClaims@1"
	KindFundingDecision       = "FundingDecision@1"
	KindLateResult            = "LateSettlementCommandResult@1"
	KindCaseResolutionApplied = "BillingCaseResolutionApplied@1"
)

// Prefixes of the late chain's quadruples (own and referenced alike).
const (
	PrefixLateCommandRequest    = "lateSettlementCommandRequest"
	PrefixLateImpactPreview     = "lateSettlementCommandImpactPreview"
	PrefixLateApproval          = "lateSettlementCommandApproval"
	PrefixLateJitActivation     = "lateSettlementCommandJitActivation"
	PrefixLateCandidate         = "lateSettlementCommandCandidate"
	PrefixLateDecision          = "lateSettlementCommandDecision"
	PrefixFundingDecision       = "fundingDecision"
	PrefixLateResult            = "lateSettlementCommandResult"
	PrefixCaseResolutionApplied = "billingCaseResolutionApplied"
	PrefixLateExposure          = "lateSettlementExposure"
	PrefixLateValidationReceipt = "settlementInputCurrentValidationReceipt"
	PrefixSettlementTransition  = "billingSettlementTransition"
)

// The fixed literals of the late chain. There is exactly one action: fund
// one exposure, for exactly its amount, under Billing's FundingDecision.
const (
	ActionFundLateSettlementExposure = "fund_late_settlement_exposure"
	AudienceLateSettlementCommand    = "billing_late_settlement_command"
	RoleLateSettlementOperator       = "billing_late_settlement_operator"
	LateEffectLedger                 = "post_release_adjustment_of_exposure_amount"
	LateEffectFunding                = "billing_funding_decision"
	LateEffectExposure               = "open_to_resolved"
	LateEffectSettlementState        = "advance_one_revision"
	LateImpactStatement              = "One post-release adjustment of exactly the exposure amount, funded under Billing's FundingDecision; the exposure is resolved and the dimension's settlement state advances one revision. No other effect."
	LedgerEntryPostReleaseAdjustment = "post_release_adjustment"
	ExposureStateOpen                = "open"
	ExposureStateResolved            = "resolved"
	ResolutionSourceLateCommand      = "late_settlement_command"
	ResolutionSourceTransition       = "settlement_transition"
	// MaxFundingDecisionValidity bounds a FundingDecision's validity: Billing
	// decides funding right before the command commits, so a decision that
	// outlives the command is a standing authorization to charge.
	MaxFundingDecisionValidity = 15 * time.Minute
)

// Derivation names of the late chain (envelope.DeriveID).
const (
	DerivationLateCommandOperation    = "billing_late_settlement_command_operation@1"
	DerivationCaseResolutionOperation = "billing_case_resolution_operation@1"
	fieldLateCommandOperationID       = "lateSettlementCommandOperationId"
	fieldExposureID                   = "lateSettlementExposureId"
	fieldExposureRevision             = "exposureSettlementStateRevision"
)

// Errors of the late chain's rules.
var (
	// ErrFundingValidity: validFrom not before validUntil, or a validity
	// longer than MaxFundingDecisionValidity.
	ErrFundingValidity = errors.New("reconciliation: funding decision validity is empty or too long")
	// ErrFundingExpired: now (or the commit) is outside [validFrom, validUntil).
	ErrFundingExpired = errors.New("reconciliation: funding decision is not valid now")
	// ErrEconomicIdentity: an economic identity differs from the settlement
	// dimension's (credits | entitlement{entitlementKey,unit} | money{currency}).
	ErrEconomicIdentity = errors.New("reconciliation: economic identity differs from the dimension's")
	// ErrJTIReuse: the grant's jti and the funding decision's jti are the
	// same: the two single-use tokens are consumed separately.
	ErrJTIReuse = errors.New("reconciliation: grant and funding decision share a jti")
	// ErrNonPositiveAmount: a funding or adjustment amount that is not > 0.
	ErrNonPositiveAmount = errors.New("reconciliation: late settlement amount is not positive")
	// ErrLateResultRule: the result's revisions or amounts do not add up
	// (to = from + 1, after = before + adjustment, adjustment = funding).
	ErrLateResultRule = errors.New("reconciliation: late settlement command result does not add up")
)

// LateSettlementCommandOperationID is the operation of the late settlement
// command a decision authorizes (lateSettlementCommandOperationId), derived
// from the decision's full quadruple only, like ResolutionOperationID: the
// decision never contains it, the FundingDecision, the grant, Metering's
// receipt and the result all name it, and a replay finds the first result
// by it.
func LateSettlementCommandOperationID(decision strict.Quadruple) string {
	m := map[string]any{}
	decision.Put(m, PrefixLateDecision)
	return envelope.DeriveID(DerivationLateCommandOperation, m)
}

// CaseResolutionOperationID is the operation of an exposure's one
// resolution (resolutionOperationId): derived from the exposure id and the
// case generation only, so a command result and a mooting transition of the
// same exposure collide on one operation and the second is an
// insert-or-compare conflict, never a second resolution.
func CaseResolutionOperationID(lateSettlementExposureID string, caseGeneration int64) string {
	return envelope.DeriveID(DerivationCaseResolutionOperation, map[string]any{
		fieldExposureID: lateSettlementExposureID, fieldCaseGeneration: caseGeneration,
	})
}

// LateCase is the late settlement case generation a late command acts on:
// Operations' case ref and generation, its identity reservation, and the
// settlement dimension in full (the reservation binds the dimension, so
// every hop compares the dimension without reading it).
type LateCase struct {
	ReconciliationCaseRef string
	CaseGeneration        int64
	// Identity is the LateSettlementCaseIdentityReservation@1.
	Identity  strict.Quadruple
	Dimension billing.SettlementDimension
}

// Case returns the case identity the late command objects of this
// generation carry.
func (r *LateCaseIdentityReservation) Case() LateCase {
	return LateCase{ReconciliationCaseRef: r.ReconciliationCaseRef, CaseGeneration: r.CaseGeneration, Identity: r.Reservation, Dimension: r.Dimension}
}

func (c LateCase) put(m map[string]any) {
	m["reconciliationCaseRef"], m[fieldCaseGeneration] = c.ReconciliationCaseRef, c.CaseGeneration
	c.Identity.Put(m, PrefixLateCaseIdentity)
	putDimension(m, c.Dimension)
}

func putDimension(m map[string]any, d billing.SettlementDimension) {
	m["billingReservationId"], m["billingAccountId"], m["runId"] = d.BillingReservationID, d.BillingAccountID, d.RunID
	m["runStepId"], m["executionAttemptId"], m["chargeDimensionKey"] = d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey
	m[fieldSettlementDimensionID], m["settlementEconomicIdentity"] = d.SettlementDimensionID(), d.EconomicIdentity.Map()
}

func lateCaseOf(m map[string]any) LateCase {
	return LateCase{ReconciliationCaseRef: str(m, "reconciliationCaseRef"), CaseGeneration: i64(m, fieldCaseGeneration),
		Identity: quad(m, PrefixLateCaseIdentity), Dimension: dimensionOf(m)}
}

func dimensionOf(m map[string]any) billing.SettlementDimension {
	return billing.SettlementDimension{BillingReservationID: str(m, "billingReservationId"), BillingAccountID: str(m, "billingAccountId"),
		RunID: str(m, "runId"), RunStepID: str(m, "runStepId"), ExecutionAttemptID: str(m, "executionAttemptId"),
		ChargeDimensionKey: str(m, "chargeDimensionKey"), EconomicIdentity: economicIdentityOf(obj(m, "settlementEconomicIdentity"))}
}

func economicIdentityOf(e map[string]any) envelope.SettlementEconomicIdentityV1 {
	return envelope.SettlementEconomicIdentityV1{Kind: str(e, "kind"), EntitlementKey: str(e, "entitlementKey"), Unit: str(e, "unit"), Currency: str(e, "currency")}
}

func lateCaseFields() []schema.Field {
	return schema.Fields(
		schema.F("reconciliationCaseRef", schema.RefText, "LateSettlementCaseRef(settlementDimensionId, caseGeneration)"),
		schema.F(fieldCaseGeneration, schema.Int{Min: 1}, ""),
		schema.Quad(PrefixLateCaseIdentity, "the LateSettlementCaseIdentityReservation@1 of the generation"),
		ids("billingReservationId", "billingAccountId", "runId", "runStepId", "executionAttemptId"),
		schema.F("chargeDimensionKey", schema.KeyText, "registered charge dimension key"),
		schema.F(fieldSettlementDimensionID, uuid, "derivation settlement_dimension@1 over reservation/run/step/attempt/dimension"),
		schema.F("settlementEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, "the dimension's economic identity"),
	)
}

// diff names the first field in which c and o differ ("" when equal).
func (c LateCase) diff(o LateCase) string {
	switch {
	case c.ReconciliationCaseRef != o.ReconciliationCaseRef:
		return "reconciliationCaseRef"
	case c.CaseGeneration != o.CaseGeneration:
		return fieldCaseGeneration
	case c.Identity != o.Identity:
		return PrefixLateCaseIdentity
	}
	return dimensionDiff(c.Dimension, o.Dimension)
}

func dimensionDiff(a, b billing.SettlementDimension) string {
	switch {
	case a.BillingReservationID != b.BillingReservationID:
		return "billingReservationId"
	case a.BillingAccountID != b.BillingAccountID:
		return "billingAccountId"
	case a.RunID != b.RunID:
		return "runId"
	case a.RunStepID != b.RunStepID:
		return "runStepId"
	case a.ExecutionAttemptID != b.ExecutionAttemptID:
		return "executionAttemptId"
	case a.ChargeDimensionKey != b.ChargeDimensionKey:
		return "chargeDimensionKey"
	case a.EconomicIdentity != b.EconomicIdentity:
		return "settlementEconomicIdentity"
	}
	return ""
}

// LateExposureRef names one LateSettlementExposure@1: its derived id, the
// settlement state revision that recorded it (so the id recomputes here,
// and Operations closes by case generation and exposure revision) and its
// quadruple.
type LateExposureRef struct {
	LateSettlementExposureID string
	SettlementStateRevision  int64
	Exposure                 strict.Quadruple
}

// ExposureRef returns the reference late command objects carry for e.
func ExposureRef(e *billing.LateSettlementExposure) LateExposureRef {
	return LateExposureRef{LateSettlementExposureID: e.ExposureID(), SettlementStateRevision: e.SettlementStateRevision, Exposure: e.Exposure}
}

func (x LateExposureRef) put(m map[string]any) {
	m[fieldExposureID], m[fieldExposureRevision] = x.LateSettlementExposureID, x.SettlementStateRevision
	x.Exposure.Put(m, PrefixLateExposure)
}

func exposureRefOf(m map[string]any) LateExposureRef {
	return LateExposureRef{LateSettlementExposureID: str(m, fieldExposureID), SettlementStateRevision: i64(m, fieldExposureRevision),
		Exposure: quad(m, PrefixLateExposure)}
}

func exposureRefFields() []schema.Field {
	return schema.Fields(
		schema.F(fieldExposureID, uuid, "derivation late_settlement_exposure@1 over (settlementDimensionId, exposureSettlementStateRevision)"),
		schema.F(fieldExposureRevision, schema.Int{Min: 2}, "the settlement state revision that recorded the exposure"),
		schema.Quad(PrefixLateExposure, "the LateSettlementExposure@1 (Billing-owned)"),
	)
}

func (x LateExposureRef) diff(o LateExposureRef) string {
	switch {
	case x.LateSettlementExposureID != o.LateSettlementExposureID:
		return fieldExposureID
	case x.SettlementStateRevision != o.SettlementStateRevision:
		return fieldExposureRevision
	case x.Exposure != o.Exposure:
		return PrefixLateExposure
	}
	return ""
}

// lateCaseRules: the dimension id, the case ref and the exposure id
// recompute. A case ref of another generation (or dimension) and an
// exposure of another dimension are refused by the decoder itself.
func lateCaseRules(m map[string]any) error {
	dim := str(m, fieldSettlementDimensionID)
	if want := envelope.SettlementDimensionID(str(m, "billingReservationId"), str(m, "runId"), str(m, "runStepId"),
		str(m, "executionAttemptId"), str(m, "chargeDimensionKey")); dim != want {
		return fmt.Errorf("%w: settlementDimensionId %s (want %s)", ErrDerivedID, dim, want)
	}
	if want := LateSettlementCaseRef(dim, i64(m, fieldCaseGeneration)); str(m, "reconciliationCaseRef") != want {
		return fmt.Errorf("%w: reconciliationCaseRef %s (want %s)", ErrDerivedID, str(m, "reconciliationCaseRef"), want)
	}
	if want := billing.LateSettlementExposureID(dim, i64(m, fieldExposureRevision)); str(m, fieldExposureID) != want {
		return fmt.Errorf("%w: %s %s (want %s)", ErrDerivedID, fieldExposureID, str(m, fieldExposureID), want)
	}
	return nil
}

// lateEvidenceRules: lateCaseRules and a sorted evidence set.
func lateEvidenceRules(m map[string]any) error {
	if err := lateCaseRules(m); err != nil {
		return err
	}
	return evidenceRules(m)
}

// checkLateCommandOperation: m's lateSettlementCommandOperationId derives
// from its decision quadruple.
func checkLateCommandOperation(m map[string]any) error {
	if want := LateSettlementCommandOperationID(quad(m, PrefixLateDecision)); str(m, fieldLateCommandOperationID) != want {
		return fmt.Errorf("%w: %s %s (want %s)", ErrDerivedID, fieldLateCommandOperationID, str(m, fieldLateCommandOperationID), want)
	}
	return nil
}

// checkEconomicIdentity: the economic identity at k is the dimension's.
func checkEconomicIdentity(m map[string]any, k string) error {
	if got, want := economicIdentityOf(obj(m, k)), economicIdentityOf(obj(m, "settlementEconomicIdentity")); got != want {
		return fmt.Errorf("%w: %s %v (dimension %v)", ErrEconomicIdentity, k, got.Map(), want.Map())
	}
	return nil
}

func lateActionField() []schema.Field {
	return schema.F("action", schema.Literal{Value: ActionFundLateSettlementExposure},
		"the only action: fund exactly this exposure under Billing's FundingDecision")
}

func lateAudienceField() []schema.Field {
	return schema.F("commandAudience", schema.Literal{Value: AudienceLateSettlementCommand}, "")
}

// amount reads a canonical AmountText exactly (nil when it is not one).
func amount(s string) *big.Rat {
	if schema.AmountText.Check(s) != nil {
		return nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}
