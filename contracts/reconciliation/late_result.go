package reconciliation

import (
	"fmt"
	"math/big"
	"time"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateResult is LateSettlementCommandResult@1, Billing-owned: the stable
// result of one late settlement command, appended in the single Billing
// ledger transaction that consumes both JTIs, posts the post-release
// adjustment, resolves the exposure, advances the dimension's settlement
// state and writes billing.late-settlement-command-result.committed@1. A
// replay after a lost response finds it by lateSettlementCommandOperationId
// and returns it; another candidate under the same operation is refused.
//
// It fixes (ADR-031) the command basis (request, candidate, decision,
// command operation), the authorization (grant sha256 and jti), the case
// ref / generation / identity reservation, the two consumed JTIs (the
// grant's and the funding decision's: separate single-use tokens, so a
// rule refuses them equal, ErrJTIReuse), the funding decision and its
// policy revision, Metering's current late_settlement_command receipt
// (and the settlement input it validated, the exposure's), the exposure
// open → resolved, the ledger posting, the economic identity and the
// dimension's state after commit. It never references the
// BillingCaseResolutionApplied@1 fact (that fact references it), so the
// digest chain stays acyclic; Operations verifies it through Billing's
// directed read contract.
//
//	lateSettlementCommandResultRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	lateSettlementCommandOperationId = LateSettlementCommandOperationID(decision quadruple)
//	lateSettlementCommandRequest, lateSettlementCommandCandidate, lateSettlementCommandDecision quadruples
//	actorWorkforcePrincipalId (the grant's sub)
//	grantSha256, grantJti, fundingDecisionJti (≠ grantJti)
//	fundingDecision quadruple, fundingPolicyRevision, billingAccountSourceRevision
//	settlementInputCurrentValidationReceipt quadruple (purpose late_settlement_command, result current)
//	settlementInput               the five-tuple the receipt validated (the exposure's)
//	late case (ref, generation, identity reservation, dimension in full)
//	lateSettlementExposureId, exposureSettlementStateRevision, lateSettlementExposure quadruple
//	exposureStateBefore = open, exposureStateAfter = resolved
//	ledgerEntryKind = post_release_adjustment, ledgerPostingGroupId, adjustmentAmount (> 0, = fundingAmount)
//	ledgerEconomicIdentity        (= the dimension's)
//	fromSettlementStateRevision ≥ exposure revision, toSettlementStateRevision = from + 1
//	settledAmountBefore, settledAmountAfter = before + adjustmentAmount
//	committedAt                   excluded from the digest candidate
type LateResult struct {
	Result                       strict.Quadruple
	CommandOperationID           string
	CommandRequest               strict.Quadruple
	Candidate                    strict.Quadruple
	Decision                     strict.Quadruple
	ActorWorkforcePrincipalID    string
	GrantSHA256                  string
	GrantJTI                     string
	FundingDecisionJTI           string
	FundingDecision              strict.Quadruple
	FundingPolicyRevision        int64
	BillingAccountSourceRevision int64
	ValidationReceipt            strict.Quadruple
	SettlementInput              billing.SettlementInput
	Case                         LateCase
	Exposure                     LateExposureRef
	LedgerPostingGroupID         string
	AdjustmentAmount             string
	LedgerEconomicIdentity       envelope.SettlementEconomicIdentityV1
	FromSettlementStateRevision  int64
	SettledAmountBefore          string
	SettledAmountAfter           string
	CommittedAt                  time.Time
}

func (*LateResult) Kind() string              { return KindLateResult }
func (r *LateResult) Quad() *strict.Quadruple { return &r.Result }

// ToSettlementStateRevision is always from + 1.
func (r *LateResult) ToSettlementStateRevision() int64 { return r.FromSettlementStateRevision + 1 }

const prefixSettlementInputSnapshot = "settlementInputSnapshot"

// ToJSON returns the full JSON form.
func (r *LateResult) ToJSON() map[string]any {
	in := map[string]any{"settlementInputStateVersion": r.SettlementInput.StateVersion}
	r.SettlementInput.Snapshot.Put(in, prefixSettlementInputSnapshot)
	m := map[string]any{
		fieldLateCommandOperationID: r.CommandOperationID, "actorWorkforcePrincipalId": r.ActorWorkforcePrincipalID,
		"grantSha256": r.GrantSHA256, "grantJti": r.GrantJTI, "fundingDecisionJti": r.FundingDecisionJTI,
		"fundingPolicyRevision": r.FundingPolicyRevision, "billingAccountSourceRevision": r.BillingAccountSourceRevision,
		"settlementInput": in, "exposureStateBefore": ExposureStateOpen, "exposureStateAfter": ExposureStateResolved,
		"ledgerEntryKind": LedgerEntryPostReleaseAdjustment, "ledgerPostingGroupId": r.LedgerPostingGroupID,
		"adjustmentAmount": r.AdjustmentAmount, "ledgerEconomicIdentity": r.LedgerEconomicIdentity.Map(),
		"fromSettlementStateRevision": r.FromSettlementStateRevision, "toSettlementStateRevision": r.ToSettlementStateRevision(),
		"settledAmountBefore": r.SettledAmountBefore, "settledAmountAfter": r.SettledAmountAfter,
		"committedAt": strict.FormatTimestamp(r.CommittedAt),
	}
	r.CommandRequest.Put(m, PrefixLateCommandRequest)
	r.Candidate.Put(m, PrefixLateCandidate)
	r.Decision.Put(m, PrefixLateDecision)
	r.FundingDecision.Put(m, PrefixFundingDecision)
	r.ValidationReceipt.Put(m, PrefixLateValidationReceipt)
	r.Case.put(m)
	r.Exposure.put(m)
	r.Result.Put(m, PrefixLateResult)
	return m
}

// DecodeLateResult strictly decodes a result, checks its rules and
// verifies its digest.
func DecodeLateResult(doc []byte) (*LateResult, error) {
	m, err := decodeMap(KindLateResult, doc)
	if err != nil {
		return nil, err
	}
	in := obj(m, "settlementInput")
	return &LateResult{
		Result: quad(m, PrefixLateResult), CommandOperationID: str(m, fieldLateCommandOperationID),
		CommandRequest: quad(m, PrefixLateCommandRequest), Candidate: quad(m, PrefixLateCandidate), Decision: quad(m, PrefixLateDecision),
		ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"), GrantSHA256: str(m, "grantSha256"), GrantJTI: str(m, "grantJti"),
		FundingDecisionJTI: str(m, "fundingDecisionJti"), FundingDecision: quad(m, PrefixFundingDecision),
		FundingPolicyRevision: i64(m, "fundingPolicyRevision"), BillingAccountSourceRevision: i64(m, "billingAccountSourceRevision"),
		ValidationReceipt: quad(m, PrefixLateValidationReceipt),
		SettlementInput:   billing.SettlementInput{Snapshot: quad(in, prefixSettlementInputSnapshot), StateVersion: i64(in, "settlementInputStateVersion")},
		Case:              lateCaseOf(m), Exposure: exposureRefOf(m), LedgerPostingGroupID: str(m, "ledgerPostingGroupId"),
		AdjustmentAmount: str(m, "adjustmentAmount"), LedgerEconomicIdentity: economicIdentityOf(obj(m, "ledgerEconomicIdentity")),
		FromSettlementStateRevision: i64(m, "fromSettlementStateRevision"), SettledAmountBefore: str(m, "settledAmountBefore"),
		SettledAmountAfter: str(m, "settledAmountAfter"), CommittedAt: tm(m, "committedAt"),
	}, nil
}

// LateResultDef describes LateSettlementCommandResult@1.
var LateResultDef = &schema.Def{Name: "LateSettlementCommandResultV1",
	Doc: "LateSettlementCommandResult@1: Billing's stable result of one late settlement command: basis, grant, both consumed JTIs, funding, Metering receipt, exposure open → resolved, ledger posting, economic identity and dimension state after commit; never references the applied fact.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateResult, "assigned by Billing; excluded from the digest candidate"),
		schema.F(fieldLateCommandOperationID, uuid, "LateSettlementCommandOperationID(decision quadruple)"),
		schema.Quad(PrefixLateCommandRequest, "LateSettlementCommandRequest@1"),
		schema.Quad(PrefixLateCandidate, "LateSettlementCommandCandidate@1"),
		schema.Quad(PrefixLateDecision, "LateSettlementCommandDecision@1"),
		principal("actorWorkforcePrincipalId", "the grant's sub; the event envelope actor"),
		schema.F("grantSha256", SHA256Text, "SHA-256 of the consumed compact JWS"),
		schema.F("grantJti", uuid, "the consumed grant's jti"),
		schema.F("fundingDecisionJti", uuid, "the consumed funding decision's jti; never the grant's"),
		schema.Quad(PrefixFundingDecision, "FundingDecision@1"),
		schema.F("fundingPolicyRevision", schema.Int{Min: 1}, "the funding decision's policy revision"),
		schema.F("billingAccountSourceRevision", schema.Int{Min: 1}, "the funding decision's account source revision"),
		schema.Quad(PrefixLateValidationReceipt, "Metering's SettlementInputCurrentValidationReceipt@1, purpose late_settlement_command, current"),
		schema.F("settlementInput", schema.Ref{Def: billing.SettlementInputDef}, "the five-tuple the receipt validated: the exposure's settlement input"),
		lateCaseFields(),
		exposureRefFields(),
		schema.F("exposureStateBefore", schema.Literal{Value: ExposureStateOpen}, ""),
		schema.F("exposureStateAfter", schema.Literal{Value: ExposureStateResolved}, ""),
		schema.F("ledgerEntryKind", schema.Literal{Value: LedgerEntryPostReleaseAdjustment}, "the one posting of the command"),
		schema.F("ledgerPostingGroupId", uuid, "the ledger posting group of the adjustment"),
		schema.F("adjustmentAmount", schema.AmountText, "positive; equals the funding decision's fundingAmount"),
		schema.F("ledgerEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, "equals the dimension's settlementEconomicIdentity"),
		schema.F("fromSettlementStateRevision", schema.Int{Min: 2}, "the dimension's state revision before commit; ≥ exposureSettlementStateRevision"),
		schema.F("toSettlementStateRevision", schema.Int{Min: 3}, "fromSettlementStateRevision + 1"),
		schema.F("settledAmountBefore", schema.AmountText, "settled amount at the from revision"),
		schema.F("settledAmountAfter", schema.AmountText, "settledAmountBefore + adjustmentAmount"),
		schema.F("committedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// lateResultRules: derived identifiers, separate JTIs, the dimension's
// economic identity, and revisions and amounts that add up.
func lateResultRules(m map[string]any) error {
	if err := lateCaseRules(m); err != nil {
		return err
	}
	if err := checkLateCommandOperation(m); err != nil {
		return err
	}
	if str(m, "grantJti") == str(m, "fundingDecisionJti") {
		return fmt.Errorf("%w: %s", ErrJTIReuse, str(m, "grantJti"))
	}
	if err := checkEconomicIdentity(m, "ledgerEconomicIdentity"); err != nil {
		return err
	}
	from, to := i64(m, "fromSettlementStateRevision"), i64(m, "toSettlementStateRevision")
	if to != from+1 {
		return fmt.Errorf("%w: toSettlementStateRevision %d is not %d + 1", ErrLateResultRule, to, from)
	}
	if exp := i64(m, fieldExposureRevision); from < exp {
		return fmt.Errorf("%w: from revision %d is before the exposure's revision %d", ErrLateResultRule, from, exp)
	}
	adj, before, after := amount(str(m, "adjustmentAmount")), amount(str(m, "settledAmountBefore")), amount(str(m, "settledAmountAfter"))
	if adj == nil || adj.Sign() <= 0 {
		return fmt.Errorf("%w: adjustmentAmount %q", ErrNonPositiveAmount, str(m, "adjustmentAmount"))
	}
	if before == nil || after == nil || after.Cmp(new(big.Rat).Add(before, adj)) != 0 {
		return fmt.Errorf("%w: settledAmountAfter %s is not %s + %s", ErrLateResultRule, str(m, "settledAmountAfter"),
			str(m, "settledAmountBefore"), str(m, "adjustmentAmount"))
	}
	return nil
}
