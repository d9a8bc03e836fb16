package reconciliation

import (
	"fmt"
	"strconv"
	"time"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/strict"
)

// LateChain is one late settlement command, object by object, as Billing
// holds it when it commits (or replays) the command: Operations' chain, the
// grant's verified claims and the SHA-256 of its compact JWS, Billing's
// exposure and funding decision, Metering's receipt, and Billing's result
// and applied fact.
type LateChain struct {
	Request     *LateCommandRequest
	Preview     *LateImpactPreview
	Approval    *LateApproval
	Jit         *LateJitActivation
	Candidate   *LateCandidate
	Decision    *LateDecision
	Claims      *LateGrantClaims
	GrantSHA256 string
	Exposure    *billing.LateSettlementExposure
	Funding     *FundingDecision
	Receipt     *meterfacts.SettlementInputCurrentValidationReceipt
	Result      *LateResult
	Applied     *CaseResolutionApplied
}

// CheckLateChain verifies the whole late settlement command chain in order,
// request → preview → approval → JIT → candidate → decision → grant claims
// → funding decision (with the exposure and Metering's receipt) → result →
// applied fact, field by field: every object must be present and sealed.
// now must lie in the JIT window and in the funding decision's validity.
// The first failed binding is a *ChainMismatchError naming it; a
// self-approval is ErrSelfApproval, a JIT window or funding validity that
// does not contain now ErrJitExpired or ErrFundingExpired, one jti used as
// both grant and funding decision jti ErrJTIReuse.
func CheckLateChain(ch LateChain, now time.Time) error {
	if err := CheckLateAuthorization(ch.Request, ch.Preview, ch.Approval, ch.Jit, ch.Candidate, ch.Decision, now); err != nil {
		return err
	}
	if err := CheckLateGrant(ch.Claims, ch.Candidate, ch.Decision); err != nil {
		return err
	}
	if err := CheckFundingDecision(ch.Funding, ch.Decision, ch.Exposure, now); err != nil {
		return err
	}
	if err := CheckLateReceipt(ch.Receipt, ch.Decision, ch.Exposure); err != nil {
		return err
	}
	if err := CheckLateResult(ch.Result, ch.Claims, ch.GrantSHA256, ch.Funding, ch.Receipt); err != nil {
		return err
	}
	return CheckCaseResolutionApplied(ch.Applied, ch.Result)
}

// CheckLateAuthorization verifies the bindings of the objects Operations
// decides on, like CheckChain: digests recompute; preview, approval and
// activation name the request (the approval also the preview, the preview
// also the request's exposure); nobody approves their own command; the
// candidate names all four and repeats the requester as actor, the late
// case, the exposure and the evidence set; the activation's actor is the
// candidate's and its window contains now; the decision names the
// candidate and the request and repeats the candidate's case, exposure,
// actor and evidence.
func CheckLateAuthorization(req *LateCommandRequest, preview *LateImpactPreview, approval *LateApproval, jit *LateJitActivation,
	cand *LateCandidate, dec *LateDecision, now time.Time) error {
	var c checker
	sealedObject(&c, "request", req)
	sealedObject(&c, "impactPreview", preview)
	sealedObject(&c, "approval", approval)
	sealedObject(&c, "jitActivation", jit)
	sealedObject(&c, "candidate", cand)
	sealedObject(&c, "decision", dec)
	if c.err != nil {
		return c.err
	}
	c.quad("impactPreview", PrefixLateCommandRequest, preview.CommandRequest, req.Request)
	c.exposure("impactPreview", preview.Exposure, req.Exposure)

	c.quad("approval", PrefixLateCommandRequest, approval.CommandRequest, req.Request)
	c.quad("approval", PrefixLateImpactPreview, approval.ImpactPreview, preview.Preview)
	if c.err == nil && (approval.ApproverWorkforcePrincipalID == req.RequesterWorkforcePrincipalID ||
		approval.ApproverWorkforcePrincipalID == cand.ActorWorkforcePrincipalID) {
		c.err = fmt.Errorf("%w: %s", ErrSelfApproval, approval.ApproverWorkforcePrincipalID)
	}
	c.eq("approval.requesterWorkforcePrincipalId", approval.RequesterWorkforcePrincipalID, req.RequesterWorkforcePrincipalID)

	c.quad("candidate", PrefixLateCommandRequest, cand.CommandRequest, req.Request)
	c.quad("candidate", PrefixLateImpactPreview, cand.ImpactPreview, preview.Preview)
	c.quad("candidate", PrefixLateApproval, cand.Approval, approval.Approval)
	c.quad("candidate", PrefixLateJitActivation, cand.JitActivation, jit.Activation)
	c.eq("candidate.actorWorkforcePrincipalId", cand.ActorWorkforcePrincipalID, req.RequesterWorkforcePrincipalID)
	c.lateCase("candidate", cand.Case, req.Case)
	c.exposure("candidate", cand.Exposure, req.Exposure)
	c.evidence("candidate", cand.Evidence, req.Evidence)

	c.quad("jitActivation", PrefixLateCommandRequest, jit.CommandRequest, req.Request)
	c.eq("jitActivation.actorWorkforcePrincipalId", jit.ActorWorkforcePrincipalID, cand.ActorWorkforcePrincipalID)
	if c.err == nil && !jit.Active(now) {
		c.err = fmt.Errorf("%w: %s not in [%s, %s)", ErrJitExpired, strict.FormatTimestamp(now),
			strict.FormatTimestamp(jit.NotBefore), strict.FormatTimestamp(jit.ExpiresAt))
	}

	c.lateDecision(dec, cand)
	c.quad("decision", PrefixLateCommandRequest, dec.CommandRequest, req.Request)
	return c.err
}

// CheckLateGrant verifies that verified late grant claims bind exactly this
// decision and its candidate: quadruples, command operation, sub = actor,
// bound workload, late case, exposure and evidence set. The JWS signature,
// its time window and its jti are the verifier's to check.
func CheckLateGrant(claims *LateGrantClaims, cand *LateCandidate, dec *LateDecision) error {
	var c checker
	c.present("grant", claims != nil)
	sealedObject(&c, "candidate", cand)
	sealedObject(&c, "decision", dec)
	if c.err != nil {
		return c.err
	}
	c.lateDecision(dec, cand)
	c.quad("grant", PrefixLateCommandRequest, claims.CommandRequest, cand.CommandRequest)
	c.quad("grant", PrefixLateCandidate, claims.Candidate, cand.Candidate)
	c.quad("grant", PrefixLateDecision, claims.Decision, dec.Decision)
	c.eq("grant."+fieldLateCommandOperationID, claims.CommandOperationID, dec.CommandOperationID())
	c.eq("grant.sub", claims.Subject, cand.ActorWorkforcePrincipalID)
	c.eq("grant.boundWorkload", claims.BoundWorkload, cand.BoundWorkload)
	c.lateCase("grant", claims.Case, dec.Case)
	c.exposure("grant", claims.Exposure, dec.Exposure)
	c.evidence("grant", claims.Evidence, dec.Evidence)
	return c.err
}

// CheckLateExposure verifies that Billing's exposure is the one a late
// command names, in the case it names: the exposure is sealed, its id,
// revision and quadruple are ref's, its dimension is the case's, and it
// requested exactly this case (ref, generation, identity reservation and
// the derived case request operation). Operations runs it on the exposure
// it read from Billing before deciding; CheckFundingDecision runs it too.
func CheckLateExposure(exposure *billing.LateSettlementExposure, lc LateCase, ref LateExposureRef) error {
	var c checker
	sealedExposure(&c, exposure)
	if c.err != nil {
		return c.err
	}
	c.exposure("exposure", ExposureRef(exposure), ref)
	if d := dimensionDiff(exposure.Dimension, lc.Dimension); d != "" {
		c.fail("exposure." + d)
	}
	if k := exposure.Case; k == nil {
		c.fail("exposure.caseRequest")
	} else {
		c.eq("exposure.reconciliationCaseRef", k.ReconciliationCaseRef, lc.ReconciliationCaseRef)
		c.eq("exposure."+fieldCaseGeneration, strconv.FormatInt(k.CaseGeneration, 10), strconv.FormatInt(lc.CaseGeneration, 10))
		c.quad("exposure", PrefixLateCaseIdentity, k.Identity, lc.Identity)
		c.eq("exposure.caseRequestOperationId", k.CaseRequestOperationID,
			LateSettlementCaseRequestOperationID(exposure.Dimension.SettlementDimensionID(), k.CaseGeneration))
	}
	return c.err
}

// CheckFundingDecision verifies that Billing's funding decision funds
// exactly this decided command and this exposure: CheckLateExposure with
// the decision's case and exposure; the funding decision names the same
// case and exposure, the decision's command operation, exactly the
// exposure's amount and the dimension's economic identity; now lies in its
// validity (ErrFundingExpired). A funding decision for another generation,
// case, exposure, amount or economic identity is a *ChainMismatchError.
func CheckFundingDecision(fd *FundingDecision, dec *LateDecision, exposure *billing.LateSettlementExposure, now time.Time) error {
	var c checker
	sealedObject(&c, "decision", dec)
	if c.err == nil {
		c.err = CheckLateExposure(exposure, dec.Case, dec.Exposure)
	}
	sealedObject(&c, "fundingDecision", fd)
	if c.err != nil {
		return c.err
	}
	c.lateCase("fundingDecision", fd.Case, dec.Case)
	c.exposure("fundingDecision", fd.Exposure, dec.Exposure)
	c.eq("fundingDecision."+fieldLateCommandOperationID, fd.CommandOperationID, dec.CommandOperationID())
	c.eq("fundingDecision.fundingAmount", fd.FundingAmount, exposure.ExposureAmount)
	if fd.EconomicIdentity != dec.Case.Dimension.EconomicIdentity {
		c.fail("fundingDecision.fundingEconomicIdentity")
	}
	if c.err == nil && !fd.Valid(now) {
		c.err = fmt.Errorf("%w: %s not in [%s, %s)", ErrFundingExpired, strict.FormatTimestamp(now),
			strict.FormatTimestamp(fd.ValidFrom), strict.FormatTimestamp(fd.ValidUntil))
	}
	return c.err
}

// CheckLateReceipt verifies that Metering's receipt is the current
// late_settlement_command receipt of this command: purpose
// late_settlement_command, validation operation = the command operation,
// input manifest digest = the exposure's digest (the exposure is the
// command's basis), the exposure's dimension and settlement input, and
// result current.
func CheckLateReceipt(receipt *meterfacts.SettlementInputCurrentValidationReceipt, dec *LateDecision, exposure *billing.LateSettlementExposure) error {
	var c checker
	sealedObject(&c, "decision", dec)
	sealedExposure(&c, exposure)
	sealedReceipt(&c, receipt)
	if c.err != nil {
		return c.err
	}
	c.eq("receipt.purpose", receipt.Purpose, meterfacts.PurposeLateSettlementCommand)
	c.eq("receipt.validationOperationId", receipt.OperationID, dec.CommandOperationID())
	c.eq("receipt.inputManifestDigest", receipt.InputManifestDigest.String(), exposure.Exposure.Digested().String())
	c.eq("receipt.settlementDimensionId", receipt.SettlementDimensionID, exposure.Dimension.SettlementDimensionID())
	c.quad("receipt", meterfacts.PrefixSettlementInputSnapshot, receipt.Validated, exposure.SettlementInput.Snapshot)
	c.eq("receipt.settlementInputStateVersion", strconv.FormatInt(receipt.ValidatedStateVersion, 10),
		strconv.FormatInt(exposure.SettlementInput.StateVersion, 10))
	if !receipt.Current {
		c.fail("receipt.result")
	}
	return c.err
}

// CheckLateResult verifies that a result is exactly the consumption of this
// grant under this funding decision and receipt: command operation,
// quadruples, actor = sub, grant SHA-256 and jti, the funding decision's
// jti (never the grant's: ErrJTIReuse), quadruple, policy and account
// source revisions, the receipt and the input it validated, the late case
// and exposure, the adjustment = the funded amount, the economic identity,
// and a commit inside the funding validity (ErrFundingExpired). Billing
// runs it when a replayed command finds the result by its operation.
func CheckLateResult(res *LateResult, claims *LateGrantClaims, grantSHA256 string, fd *FundingDecision,
	receipt *meterfacts.SettlementInputCurrentValidationReceipt) error {
	var c checker
	c.present("grant", claims != nil)
	sealedReceipt(&c, receipt)
	sealedObject(&c, "fundingDecision", fd)
	sealedObject(&c, "result", res)
	if c.err != nil {
		return c.err
	}
	if claims.JTI == fd.JTI {
		return fmt.Errorf("%w: %s", ErrJTIReuse, claims.JTI)
	}
	c.eq("result."+fieldLateCommandOperationID, res.CommandOperationID, claims.CommandOperationID)
	c.quad("result", PrefixLateCommandRequest, res.CommandRequest, claims.CommandRequest)
	c.quad("result", PrefixLateCandidate, res.Candidate, claims.Candidate)
	c.quad("result", PrefixLateDecision, res.Decision, claims.Decision)
	c.eq("result.actorWorkforcePrincipalId", res.ActorWorkforcePrincipalID, claims.Subject)
	c.eq("result.grantSha256", res.GrantSHA256, grantSHA256)
	c.eq("result.grantJti", res.GrantJTI, claims.JTI)
	c.eq("result.fundingDecisionJti", res.FundingDecisionJTI, fd.JTI)
	c.quad("result", PrefixFundingDecision, res.FundingDecision, fd.Decision)
	c.eq("result.fundingPolicyRevision", strconv.FormatInt(res.FundingPolicyRevision, 10), strconv.FormatInt(fd.FundingPolicyRevision, 10))
	c.eq("result.billingAccountSourceRevision", strconv.FormatInt(res.BillingAccountSourceRevision, 10),
		strconv.FormatInt(fd.BillingAccountSourceRevision, 10))
	c.quad("result", PrefixLateValidationReceipt, res.ValidationReceipt, receipt.Receipt)
	c.quad("result.settlementInput", meterfacts.PrefixSettlementInputSnapshot, res.SettlementInput.Snapshot, receipt.Validated)
	c.eq("result.settlementInput.settlementInputStateVersion", strconv.FormatInt(res.SettlementInput.StateVersion, 10),
		strconv.FormatInt(receipt.ValidatedStateVersion, 10))
	c.lateCase("result", res.Case, claims.Case)
	c.exposure("result", res.Exposure, claims.Exposure)
	c.lateCase("fundingDecision", fd.Case, claims.Case)
	c.exposure("fundingDecision", fd.Exposure, claims.Exposure)
	c.eq("fundingDecision."+fieldLateCommandOperationID, fd.CommandOperationID, claims.CommandOperationID)
	c.eq("result.adjustmentAmount", res.AdjustmentAmount, fd.FundingAmount)
	if res.LedgerEconomicIdentity != fd.EconomicIdentity {
		c.fail("result.ledgerEconomicIdentity")
	}
	if c.err == nil && !fd.Valid(res.CommittedAt) {
		c.err = fmt.Errorf("%w: committed %s not in [%s, %s)", ErrFundingExpired, strict.FormatTimestamp(res.CommittedAt),
			strict.FormatTimestamp(fd.ValidFrom), strict.FormatTimestamp(fd.ValidUntil))
	}
	return c.err
}

// CheckCaseResolutionApplied verifies that an applied fact resolves
// exactly this result's exposure through it: source late_settlement_command
// naming the result, its command operation and actor, the same late case
// and exposure.
func CheckCaseResolutionApplied(applied *CaseResolutionApplied, res *LateResult) error {
	var c checker
	sealedObject(&c, "result", res)
	sealedObject(&c, "applied", applied)
	if c.err != nil {
		return c.err
	}
	c.eq("applied.resolution.resolutionSource", applied.ResolutionSource, ResolutionSourceLateCommand)
	c.quad("applied.resolution", PrefixLateResult, applied.Source, res.Result)
	c.eq("applied.resolution."+fieldLateCommandOperationID, applied.CommandOperationID, res.CommandOperationID)
	c.eq("applied.resolution.actorWorkforcePrincipalId", applied.ActorWorkforcePrincipalID, res.ActorWorkforcePrincipalID)
	c.lateCase("applied", applied.Case, res.Case)
	c.exposure("applied", applied.Exposure, res.Exposure)
	return c.err
}

// CheckCaseResolutionByTransition verifies that an applied fact resolves
// this exposure through the settlement transition that made it moot: the
// transition is sealed, of the exposure's dimension and after its revision,
// and the fact names it, its to revision, the exposure and its requested
// case.
func CheckCaseResolutionByTransition(applied *CaseResolutionApplied, exposure *billing.LateSettlementExposure,
	transition *billing.BillingSettlementTransition) error {
	var c checker
	sealedExposure(&c, exposure)
	sealedObject(&c, "applied", applied)
	if c.err == nil {
		if transition == nil {
			c.fail("transition missing")
		} else if d, err := billing.SettlementDigestOf(transition); err != nil || transition.Transition.Ref == "" || d != transition.Transition.Digested() {
			c.fail("transition digest")
		}
	}
	if c.err != nil {
		return c.err
	}
	if d := dimensionDiff(transition.Dimension, exposure.Dimension); d != "" {
		c.fail("transition." + d)
	}
	c.eq("applied.resolution.resolutionSource", applied.ResolutionSource, ResolutionSourceTransition)
	c.quad("applied.resolution", PrefixSettlementTransition, applied.Source, transition.Transition)
	c.eq("applied.resolution.toSettlementStateRevision", strconv.FormatInt(applied.ToSettlementStateRevision, 10),
		strconv.FormatInt(transition.ToSettlementStateRevision(), 10))
	c.exposure("applied", applied.Exposure, ExposureRef(exposure))
	if d := dimensionDiff(applied.Case.Dimension, exposure.Dimension); d != "" {
		c.fail("applied." + d)
	}
	if k := exposure.Case; k == nil {
		c.fail("exposure.caseRequest")
	} else {
		c.eq("applied.reconciliationCaseRef", applied.Case.ReconciliationCaseRef, k.ReconciliationCaseRef)
		c.eq("applied."+fieldCaseGeneration, strconv.FormatInt(applied.Case.CaseGeneration, 10), strconv.FormatInt(k.CaseGeneration, 10))
		c.quad("applied", PrefixLateCaseIdentity, applied.Case.Identity, k.Identity)
	}
	return c.err
}

// sealedReceipt: Metering's receipt is present, sealed and its digest recomputes.
func sealedReceipt(c *checker, r *meterfacts.SettlementInputCurrentValidationReceipt) {
	if c.err != nil {
		return
	}
	if r == nil {
		c.fail("receipt missing")
		return
	}
	if d, err := meterfacts.DigestOf(r); err != nil || r.Receipt.Ref == "" || d != r.Receipt.Digested() {
		c.fail("receipt digest")
	}
}

// sealedExposure: the exposure is present, sealed and its digest recomputes.
func sealedExposure(c *checker, e *billing.LateSettlementExposure) {
	if c.err != nil {
		return
	}
	if e == nil {
		c.fail("exposure missing")
		return
	}
	d, err := billing.SettlementDigestOf(e)
	if err != nil || e.Exposure.Ref == "" || d != e.Exposure.Digested() {
		c.fail("exposure digest")
	}
}

func (c *checker) lateCase(object string, got, want LateCase) {
	if d := got.diff(want); d != "" {
		c.fail(object + "." + d)
	}
}

func (c *checker) exposure(object string, got, want LateExposureRef) {
	if d := got.diff(want); d != "" {
		c.fail(object + "." + d)
	}
}

// lateDecision: the decision names the candidate and repeats its case,
// exposure, actor and evidence set.
func (c *checker) lateDecision(dec *LateDecision, cand *LateCandidate) {
	c.quad("decision", PrefixLateCandidate, dec.Candidate, cand.Candidate)
	c.lateCase("decision", dec.Case, cand.Case)
	c.exposure("decision", dec.Exposure, cand.Exposure)
	c.eq("decision.actorWorkforcePrincipalId", dec.ActorWorkforcePrincipalID, cand.ActorWorkforcePrincipalID)
	c.evidence("decision", dec.Evidence, cand.Evidence)
}
