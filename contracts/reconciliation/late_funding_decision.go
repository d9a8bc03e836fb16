package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// FundingDecision is FundingDecision@1, Billing-owned: Billing's own
// decision that one late settlement command may be funded from one billing
// account, for exactly the exposure's amount, under one funding policy
// revision. The operator's chain authorizes the command; only this object
// authorizes the money, and the command carries no amount (OP-1).
//
// It binds (ADR-031) the account and its source revision (the account
// state the funding was decided on; a later account change is a new
// decision), the case ref / generation / identity reservation with the
// dimension in full (the account is the dimension's), the exposure, the
// funding policy revision, the amount, the command operation, a validity
// window, the strict economic identity, and its own single-use jti. The
// window is short (≤ MaxFundingDecisionValidity) and stays in the digest:
// it is what the decision grants. fundingEconomicIdentity is stated
// separately from the dimension's and must equal it (ErrEconomicIdentity):
// a decision to fund money{EUR} never funds credits.
//
//	fundingDecisionRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingAccountSourceRevision ≥ 1
//	late case (ref, generation, identity reservation, dimension in full incl. billingAccountId)
//	lateSettlementExposureId, exposureSettlementStateRevision, lateSettlementExposure quadruple
//	fundingPolicyRevision ≥ 1
//	fundingAmount                   positive; equals the exposure's exposureAmount
//	lateSettlementCommandOperationId
//	validFrom < validUntil ≤ validFrom + 15 min   (in the digest)
//	fundingEconomicIdentity = credits | entitlement{entitlementKey,unit} | money{currency}  (= the dimension's)
//	fundingDecisionJti              uuid, single use, consumed with (never equal to) the grant's jti
//	decidedAt                       excluded from the digest candidate
type FundingDecision struct {
	Decision                     strict.Quadruple
	BillingAccountSourceRevision int64
	Case                         LateCase
	Exposure                     LateExposureRef
	FundingPolicyRevision        int64
	FundingAmount                string
	CommandOperationID           string
	ValidFrom                    time.Time
	ValidUntil                   time.Time
	EconomicIdentity             envelope.SettlementEconomicIdentityV1
	JTI                          string
	DecidedAt                    time.Time
}

func (*FundingDecision) Kind() string              { return KindFundingDecision }
func (f *FundingDecision) Quad() *strict.Quadruple { return &f.Decision }

// Valid reports whether t is inside [validFrom, validUntil).
func (f *FundingDecision) Valid(t time.Time) bool {
	return !t.Before(f.ValidFrom) && t.Before(f.ValidUntil)
}

// ToJSON returns the full JSON form.
func (f *FundingDecision) ToJSON() map[string]any {
	m := map[string]any{
		"billingAccountSourceRevision": f.BillingAccountSourceRevision, "fundingPolicyRevision": f.FundingPolicyRevision,
		"fundingAmount": f.FundingAmount, fieldLateCommandOperationID: f.CommandOperationID,
		"validFrom": strict.FormatTimestamp(f.ValidFrom), "validUntil": strict.FormatTimestamp(f.ValidUntil),
		"fundingEconomicIdentity": f.EconomicIdentity.Map(), "fundingDecisionJti": f.JTI,
		"decidedAt": strict.FormatTimestamp(f.DecidedAt),
	}
	f.Case.put(m)
	f.Exposure.put(m)
	f.Decision.Put(m, PrefixFundingDecision)
	return m
}

// DecodeFundingDecision strictly decodes a funding decision, checks its
// rules and verifies its digest.
func DecodeFundingDecision(doc []byte) (*FundingDecision, error) {
	m, err := decodeMap(KindFundingDecision, doc)
	if err != nil {
		return nil, err
	}
	return &FundingDecision{
		Decision: quad(m, PrefixFundingDecision), BillingAccountSourceRevision: i64(m, "billingAccountSourceRevision"),
		Case: lateCaseOf(m), Exposure: exposureRefOf(m), FundingPolicyRevision: i64(m, "fundingPolicyRevision"),
		FundingAmount: str(m, "fundingAmount"), CommandOperationID: str(m, fieldLateCommandOperationID),
		ValidFrom: tm(m, "validFrom"), ValidUntil: tm(m, "validUntil"),
		EconomicIdentity: economicIdentityOf(obj(m, "fundingEconomicIdentity")), JTI: str(m, "fundingDecisionJti"),
		DecidedAt: tm(m, "decidedAt"),
	}, nil
}

// FundingDecisionDef describes FundingDecision@1.
var FundingDecisionDef = &schema.Def{Name: "FundingDecisionV1",
	Doc: "FundingDecision@1: Billing's single-use decision to fund one late settlement command from one account, for exactly the exposure's amount, under one funding policy revision, within a short validity window.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixFundingDecision, "assigned by Billing; excluded from the digest candidate"),
		schema.F("billingAccountSourceRevision", schema.Int{Min: 1}, "the account state revision the funding was decided on"),
		lateCaseFields(),
		exposureRefFields(),
		schema.F("fundingPolicyRevision", schema.Int{Min: 1}, "the funding policy revision applied"),
		schema.F("fundingAmount", schema.AmountText, "positive; exactly the exposure's exposureAmount"),
		schema.F(fieldLateCommandOperationID, uuid, "the command operation funded (LateSettlementCommandOperationID of the decision)"),
		schema.F("validFrom", schema.Timestamp{}, "in the digest"),
		schema.F("validUntil", schema.Timestamp{}, "in the digest; after validFrom, at most 15 minutes later"),
		schema.F("fundingEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, "equals the dimension's settlementEconomicIdentity"),
		schema.F("fundingDecisionJti", uuid, "single use; consumed in the late command transaction"),
		schema.F("decidedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// fundingRules: derived case ref and exposure id, a positive amount, a
// short non-empty validity, the dimension's economic identity.
func fundingRules(m map[string]any) error {
	if err := lateCaseRules(m); err != nil {
		return err
	}
	if a := amount(str(m, "fundingAmount")); a == nil || a.Sign() <= 0 {
		return fmt.Errorf("%w: fundingAmount %q is not positive", ErrNonPositiveAmount, str(m, "fundingAmount"))
	}
	from, until := tm(m, "validFrom"), tm(m, "validUntil")
	if !until.After(from) || until.Sub(from) > MaxFundingDecisionValidity {
		return fmt.Errorf("%w: [%s, %s)", ErrFundingValidity, str(m, "validFrom"), str(m, "validUntil"))
	}
	return checkEconomicIdentity(m, "fundingEconomicIdentity")
}
