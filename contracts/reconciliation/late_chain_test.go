package reconciliation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/meterfacts"
	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

// OP-1, BI-2: a sealed late chain passes CheckLateChain in both variants,
// and an exposure made moot by a later transition resolves through it.
func TestCheckLateChainAccepts_OP1_BI2(t *testing.T) {
	t.Parallel()
	for _, v := range []lateVariant{lateFirst, lateSecond} {
		c := buildLateChain(t, v, nil)
		require.NoError(t, rc.CheckLateChain(c.all(), lateNow))
		require.Equal(t, c.identity.Case(), c.req.Case)
		require.Equal(t, rc.ExposureRef(c.exposure), c.req.Exposure)
		require.Equal(t, c.dec.CommandOperationID(), c.result.CommandOperationID)

		tr, moot := mootingTransition(t, c)
		require.NoError(t, rc.CheckCaseResolutionByTransition(moot, c.exposure, tr))
		require.Equal(t, c.applied.ResolutionOperationID, moot.ResolutionOperationID,
			"a command and a mooting transition of one exposure share one resolution operation")
	}
}

type lateForgery struct {
	name, stage string
	edit        func(c *lateChain)
	binding     string
}

func lateForgeries() []lateForgery {
	other := fq("other", 'e')
	dimID := lateFirst.dimension().SettlementDimensionID()
	otherGeneration := func(k *rc.LateCase) {
		k.CaseGeneration = 2
		k.ReconciliationCaseRef = rc.LateSettlementCaseRef(dimID, 2)
	}
	money := envelope.SettlementEconomicIdentityV1{Kind: "money", Currency: "EUR"}
	return []lateForgery{
		{"exposure without a case", lstExposure, func(c *lateChain) { c.exposure.Case = nil }, "exposure.caseRequest"},
		{"exposure of another case generation", lstExposure, func(c *lateChain) {
			c.exposure.Case.CaseGeneration, c.exposure.Case.ReconciliationCaseRef = 2, rc.LateSettlementCaseRef(dimID, 2)
		}, "exposure.reconciliationCaseRef"},
		{"exposure under another case request operation", lstExposure, func(c *lateChain) { c.exposure.Case.CaseRequestOperationID = otherUUID },
			"exposure.caseRequestOperationId"},

		{"preview names another request", lstPreview, func(c *lateChain) { c.preview.CommandRequest = other }, "impactPreview." + rc.PrefixLateCommandRequest},
		{"preview of another exposure", lstPreview, func(c *lateChain) { c.preview.Exposure.Exposure = other }, "impactPreview." + rc.PrefixLateExposure},
		{"approval names another request", lstApproval, func(c *lateChain) { c.approval.CommandRequest = other }, "approval." + rc.PrefixLateCommandRequest},
		{"approval names another preview", lstApproval, func(c *lateChain) { c.approval.ImpactPreview = other }, "approval." + rc.PrefixLateImpactPreview},
		{"approval names another requester", lstApproval, func(c *lateChain) { c.approval.RequesterWorkforcePrincipalID = "workforce:mallory" }, "approval.requesterWorkforcePrincipalId"},
		{"activation for another request", lstJit, func(c *lateChain) { c.jit.CommandRequest = other }, "jitActivation." + rc.PrefixLateCommandRequest},
		{"activation of another actor", lstJit, func(c *lateChain) { c.jit.ActorWorkforcePrincipalID = "workforce:mallory" }, "jitActivation.actorWorkforcePrincipalId"},
		{"candidate names another approval", lstCand, func(c *lateChain) { c.cand.Approval = other }, "candidate." + rc.PrefixLateApproval},
		{"candidate names another activation", lstCand, func(c *lateChain) { c.cand.JitActivation = other }, "candidate." + rc.PrefixLateJitActivation},
		{"candidate of another actor", lstCand, func(c *lateChain) { c.cand.ActorWorkforcePrincipalID = "workforce:mallory" }, "candidate.actorWorkforcePrincipalId"},
		{"candidate for another generation", lstCand, func(c *lateChain) { otherGeneration(&c.cand.Case) }, "candidate.reconciliationCaseRef"},
		{"candidate with another identity", lstCand, func(c *lateChain) { c.cand.Case.Identity = other }, "candidate." + rc.PrefixLateCaseIdentity},
		{"candidate in another currency", lstCand, func(c *lateChain) { c.cand.Case.Dimension.EconomicIdentity = money }, "candidate.settlementEconomicIdentity"},
		{"candidate of another exposure", lstCand, func(c *lateChain) { c.cand.Exposure.Exposure = other }, "candidate." + rc.PrefixLateExposure},
		{"candidate with other evidence", lstCand, func(c *lateChain) { c.cand.Evidence = otherEvidence(c.cand.Evidence) }, "candidate.investigationEvidenceReferences"},
		{"decision names another candidate", lstDec, func(c *lateChain) { c.dec.Candidate = other }, "decision." + rc.PrefixLateCandidate},
		{"decision names another request", lstDec, func(c *lateChain) { c.dec.CommandRequest = other }, "decision." + rc.PrefixLateCommandRequest},
		{"decision of another actor", lstDec, func(c *lateChain) { c.dec.ActorWorkforcePrincipalID = "workforce:mallory" }, "decision.actorWorkforcePrincipalId"},
		{"decision for another generation", lstDec, func(c *lateChain) { otherGeneration(&c.dec.Case) }, "decision.reconciliationCaseRef"},

		{"grant names another decision", lstClaims, func(c *lateChain) {
			c.claims.Decision = other
			c.claims.CommandOperationID = rc.LateSettlementCommandOperationID(other)
		}, "grant." + rc.PrefixLateDecision},
		{"grant for another subject", lstClaims, func(c *lateChain) { c.claims.Subject = "workforce:mallory" }, "grant.sub"},
		{"grant for another workload", lstClaims, func(c *lateChain) { c.claims.BoundWorkload = "billing.worker" }, "grant.boundWorkload"},
		{"grant for another exposure", lstClaims, func(c *lateChain) { c.claims.Exposure.Exposure = other }, "grant." + rc.PrefixLateExposure},
		{"grant for another generation", lstClaims, func(c *lateChain) { otherGeneration(&c.claims.Case) }, "grant.reconciliationCaseRef"},

		// BI-2: a funding decision for another generation, case identity,
		// exposure, amount, economic identity or operation funds nothing.
		{"funding for another generation", lstFunding, func(c *lateChain) { otherGeneration(&c.funding.Case) }, "fundingDecision.reconciliationCaseRef"},
		{"funding under another case identity", lstFunding, func(c *lateChain) { c.funding.Case.Identity = other }, "fundingDecision." + rc.PrefixLateCaseIdentity},
		{"funding of another exposure", lstFunding, func(c *lateChain) { c.funding.Exposure.Exposure = other }, "fundingDecision." + rc.PrefixLateExposure},
		{"funding of another amount", lstFunding, func(c *lateChain) { c.funding.FundingAmount = "12.6" }, "fundingDecision.fundingAmount"},
		{"funding in another economic identity", lstFunding, func(c *lateChain) {
			c.funding.Case.Dimension.EconomicIdentity, c.funding.EconomicIdentity = money, money
		}, "fundingDecision.settlementEconomicIdentity"},
		{"funding of another account", lstFunding, func(c *lateChain) { c.funding.Case.Dimension.BillingAccountID = otherUUID }, "fundingDecision.billingAccountId"},
		{"funding of another operation", lstFunding, func(c *lateChain) { c.funding.CommandOperationID = otherUUID }, "fundingDecision.lateSettlementCommandOperationId"},

		{"receipt for another purpose", lstReceipt, func(c *lateChain) { c.receipt.Purpose = meterfacts.PurposePostFinalizationTransition }, "receipt.purpose"},
		{"receipt of another operation", lstReceipt, func(c *lateChain) { c.receipt.OperationID = otherUUID }, "receipt.validationOperationId"},
		{"receipt for another basis", lstReceipt, func(c *lateChain) { c.receipt.InputManifestDigest = other.Digested() }, "receipt.inputManifestDigest"},
		{"receipt of another input", lstReceipt, func(c *lateChain) { c.receipt.Validated = other }, "receipt." + meterfacts.PrefixSettlementInputSnapshot},
		{"receipt not current", lstReceipt, func(c *lateChain) {
			c.receipt.Current, c.receipt.CurrentSnapshot, c.receipt.CurrentStateVersion = false, other, c.receipt.ValidatedStateVersion+1
		}, "receipt.result"},

		{"result of another actor", lstResult, func(c *lateChain) { c.result.ActorWorkforcePrincipalID = "workforce:mallory" }, "result.actorWorkforcePrincipalId"},
		{"result with other JWS bytes", lstResult, func(c *lateChain) { c.result.GrantSHA256 = rc.GrantSHA256(c.jws + "x") }, "result.grantSha256"},
		{"result consumed another grant", lstResult, func(c *lateChain) { c.result.GrantJTI = otherUUID }, "result.grantJti"},
		{"result consumed another funding jti", lstResult, func(c *lateChain) { c.result.FundingDecisionJTI = otherUUID }, "result.fundingDecisionJti"},
		{"result names another funding decision", lstResult, func(c *lateChain) { c.result.FundingDecision = other }, "result." + rc.PrefixFundingDecision},
		{"result under another policy", lstResult, func(c *lateChain) { c.result.FundingPolicyRevision++ }, "result.fundingPolicyRevision"},
		{"result under another account revision", lstResult, func(c *lateChain) { c.result.BillingAccountSourceRevision++ }, "result.billingAccountSourceRevision"},
		{"result of another input state version", lstResult, func(c *lateChain) { c.result.SettlementInput.StateVersion++ },
			"result.settlementInput.settlementInputStateVersion"},
		{"result names another receipt", lstResult, func(c *lateChain) { c.result.ValidationReceipt = other }, "result." + rc.PrefixLateValidationReceipt},
		{"result adjusts another amount", lstResult, func(c *lateChain) {
			c.result.AdjustmentAmount, c.result.SettledAmountAfter = "13", "53"
		}, "result.adjustmentAmount"},
		{"result for another generation", lstResult, func(c *lateChain) { otherGeneration(&c.result.Case) }, "result.reconciliationCaseRef"},

		{"applied names another result", lstApplied, func(c *lateChain) { c.applied.Source = other }, "applied.resolution." + rc.PrefixLateResult},
		{"applied by another actor", lstApplied, func(c *lateChain) { c.applied.ActorWorkforcePrincipalID = "workforce:mallory" }, "applied.resolution.actorWorkforcePrincipalId"},
		{"applied under another command operation", lstApplied, func(c *lateChain) { c.applied.CommandOperationID = otherUUID }, "applied.resolution.lateSettlementCommandOperationId"},
		{"applied by a transition", lstApplied, func(c *lateChain) {
			c.applied.ResolutionSource, c.applied.CommandOperationID, c.applied.ActorWorkforcePrincipalID = rc.ResolutionSourceTransition, "", ""
			c.applied.ToSettlementStateRevision = 9
		}, "applied.resolution.resolutionSource"},
	}
}

// OP-1, BI-2: every binding of the late chain refuses a one-field forgery
// (the rest of the chain resealed around it) with a ChainMismatchError
// naming exactly that binding.
func TestCheckLateChainRefusesEachForgery_OP1_BI2(t *testing.T) {
	t.Parallel()
	for _, f := range lateForgeries() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			c := buildLateChain(t, lateFirst, func(stage string, c *lateChain) {
				if stage == f.stage {
					f.edit(c)
				}
			})
			err := rc.CheckLateChain(c.all(), lateNow)
			require.ErrorIs(t, err, rc.ErrChainMismatch)
			var mismatch *rc.ChainMismatchError
			require.ErrorAs(t, err, &mismatch)
			require.Equal(t, f.binding, mismatch.Binding)
		})
	}
}

// BI-2: the grant's jti and the funding decision's jti are two single-use
// tokens; one value used as both is refused by the result's decoder (and
// so Seal) and by CheckLateResult.
func TestLateJTIReuseRefused_BI2(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	reused := *c.funding
	reused.JTI = c.claims.JTI
	_, err := rc.Seal(&reused) // the funding decision alone cannot know the grant's jti
	require.NoError(t, err)
	require.ErrorIs(t, rc.CheckLateResult(c.result, c.claims, rc.GrantSHA256(c.jws), &reused, c.receipt), rc.ErrJTIReuse)
	ch := c.all()
	ch.Funding = &reused
	require.ErrorIs(t, rc.CheckLateChain(ch, lateNow), rc.ErrJTIReuse)

	c.result.FundingDecisionJTI = c.result.GrantJTI
	_, err = rc.Seal(c.result)
	require.ErrorIs(t, err, rc.ErrInvalidObject)
	require.ErrorIs(t, err, rc.ErrJTIReuse)
}

// OP-1: nobody approves their own late command, even when a forged
// approval names someone else as requester to pass its own decoder.
func TestCheckLateChainRefusesSelfApproval_OP1(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, func(stage string, c *lateChain) {
		if stage == lstApproval {
			c.approval.RequesterWorkforcePrincipalID = "workforce:mallory"
			c.approval.ApproverWorkforcePrincipalID = c.req.RequesterWorkforcePrincipalID
		}
	})
	require.ErrorIs(t, rc.CheckLateChain(c.all(), lateNow), rc.ErrSelfApproval)

	c = buildLateChain(t, lateFirst, nil)
	c.approval.ApproverWorkforcePrincipalID = c.approval.RequesterWorkforcePrincipalID
	_, err := rc.Seal(c.approval)
	require.ErrorIs(t, err, rc.ErrInvalidObject)
	require.ErrorIs(t, err, rc.ErrSelfApproval)
}

// BI-2, OP-1: now must lie in the JIT window and the funding decision's
// validity [validFrom, validUntil); the result must commit inside it.
func TestLateWindows_BI2_OP1(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	require.NoError(t, rc.CheckLateChain(c.all(), c.funding.ValidFrom))
	require.NoError(t, rc.CheckLateChain(c.all(), c.funding.ValidUntil.Add(-time.Microsecond)))
	require.ErrorIs(t, rc.CheckLateChain(c.all(), c.funding.ValidFrom.Add(-time.Microsecond)), rc.ErrFundingExpired)
	require.ErrorIs(t, rc.CheckLateChain(c.all(), c.funding.ValidUntil), rc.ErrFundingExpired)
	require.ErrorIs(t, rc.CheckLateChain(c.all(), c.jit.NotBefore.Add(-time.Microsecond)), rc.ErrJitExpired)

	late := buildLateChain(t, lateFirst, func(stage string, c *lateChain) {
		if stage == lstResult {
			c.result.CommittedAt = c.funding.ValidUntil
		}
	})
	require.ErrorIs(t, rc.CheckLateResult(late.result, late.claims, rc.GrantSHA256(late.jws), late.funding, late.receipt), rc.ErrFundingExpired)
}

// OP-1: an object edited after sealing, or missing, is refused before any
// binding is trusted; the foreign objects (Billing's exposure, Metering's
// receipt) too.
func TestCheckLateChainRefusesUnsealedOrMissing_OP1(t *testing.T) {
	t.Parallel()
	var mismatch *rc.ChainMismatchError
	for name, edit := range map[string]func(c *lateChain, ch *rc.LateChain){
		"fundingDecision digest":  func(c *lateChain, _ *rc.LateChain) { c.funding.FundingAmount = "1" },
		"fundingDecision missing": func(_ *lateChain, ch *rc.LateChain) { ch.Funding = nil },
		"exposure digest":         func(c *lateChain, _ *rc.LateChain) { c.exposure.ExposureAmount = "1" },
		"exposure missing":        func(_ *lateChain, ch *rc.LateChain) { ch.Exposure = nil },
		"receipt digest":          func(c *lateChain, _ *rc.LateChain) { c.receipt.OperationID = otherUUID },
		"receipt missing":         func(_ *lateChain, ch *rc.LateChain) { ch.Receipt = nil },
		"grant missing":           func(_ *lateChain, ch *rc.LateChain) { ch.Claims = nil },
		"result digest":           func(c *lateChain, _ *rc.LateChain) { c.result.LedgerPostingGroupID = otherUUID },
		"applied missing":         func(_ *lateChain, ch *rc.LateChain) { ch.Applied = nil },
		"candidate digest":        func(c *lateChain, _ *rc.LateChain) { c.cand.BoundWorkload = "admin.other-gateway" },
	} {
		c := buildLateChain(t, lateFirst, nil)
		ch := c.all()
		edit(c, &ch)
		require.ErrorAs(t, rc.CheckLateChain(ch, lateNow), &mismatch, name)
		require.Equal(t, name, mismatch.Binding)
	}
}

// OP-1: the two chains never cross: a finalization resolution grant's
// claims are not late claims, and late claims are not finalization claims.
func TestLateAndFinalizationGrantsDoNotCross_OP1(t *testing.T) {
	t.Parallel()
	fin, err := buildChain(t, firstGeneration, nil).claims.Marshal()
	require.NoError(t, err)
	_, err = rc.DecodeLateGrantClaims(fin)
	require.ErrorIs(t, err, strict.ErrUnexpectedLiteral)
	late, err := buildLateChain(t, lateFirst, nil).claims.Marshal()
	require.NoError(t, err)
	_, err = rc.DecodeGrantClaims(late)
	require.ErrorIs(t, err, strict.ErrUnexpectedLiteral)
}

// BI-2: the applied fact's transition branch binds the mooting transition
// exactly.
func TestCaseResolutionByTransitionBindings_BI2(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	tr, moot := mootingTransition(t, c)
	var mismatch *rc.ChainMismatchError

	other := *moot
	other.Source = fq("bst-other", 'e')
	_, err := rc.SealAddressed(&other, "bcra-")
	require.NoError(t, err)
	require.ErrorAs(t, rc.CheckCaseResolutionByTransition(&other, c.exposure, tr), &mismatch)
	require.Equal(t, "applied.resolution."+rc.PrefixSettlementTransition, mismatch.Binding)

	require.ErrorAs(t, rc.CheckCaseResolutionByTransition(c.applied, c.exposure, tr), &mismatch)
	require.Equal(t, "applied.resolution.resolutionSource", mismatch.Binding)
	require.ErrorAs(t, rc.CheckCaseResolutionApplied(moot, c.result), &mismatch)
	require.Equal(t, "applied.resolution.resolutionSource", mismatch.Binding)
}

// CT-3: bookkeeping times (committedAt, appliedAt, decidedAt) are outside
// the digest; the funding validity is in it.
func TestLateDigestCoversValidityNotBookkeeping_CT3(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	for _, x := range []struct {
		obj  rc.Sealed
		edit func()
	}{
		{c.result, func() { c.result.CommittedAt = c.result.CommittedAt.Add(time.Hour) }},
		{c.applied, func() { c.applied.AppliedAt = c.applied.AppliedAt.Add(time.Hour) }},
		{c.funding, func() { c.funding.DecidedAt = c.funding.DecidedAt.Add(time.Hour) }},
	} {
		before := *x.obj.Quad()
		x.edit()
		d, err := rc.DigestOf(x.obj)
		require.NoError(t, err)
		require.Equal(t, before.Digested(), d, x.obj.Kind())
	}
	before := c.funding.Decision
	c.funding.ValidUntil = c.funding.ValidUntil.Add(time.Second)
	d, err := rc.DigestOf(c.funding)
	require.NoError(t, err)
	require.NotEqual(t, before.Digested(), d)
}

// OP-1, BI-2: the late derivations are frozen vectors, and every input
// changes them.
func TestLateDerivationVectors_OP1_BI2(t *testing.T) {
	t.Parallel()
	require.Equal(t, lateCommandOperationVector, rc.LateSettlementCommandOperationID(fq("lscd-1", 'a')))
	require.Equal(t, caseResolutionOperationVector, rc.CaseResolutionOperationID(otherUUID, 1))
	base := fq("lscd-1", 'a')
	require.NotEqual(t, rc.ResolutionOperationID(base), rc.LateSettlementCommandOperationID(base), "distinct derivation names")
	for _, edit := range []func(q *strict.Quadruple){
		func(q *strict.Quadruple) { q.Ref = "lscd-2" },
		func(q *strict.Quadruple) { q.SchemaVersion = "2" },
		func(q *strict.Quadruple) { q.DigestAlgorithmVersion = "jcs-sha256-v2" },
		func(q *strict.Quadruple) { q.Digest = fq("", 'b').Digest },
	} {
		q := base
		edit(&q)
		require.NotEqual(t, rc.LateSettlementCommandOperationID(base), rc.LateSettlementCommandOperationID(q))
	}
	require.NotEqual(t, rc.CaseResolutionOperationID(otherUUID, 1), rc.CaseResolutionOperationID(otherUUID, 2))
	require.NotEqual(t, rc.CaseResolutionOperationID(otherUUID, 1), rc.CaseResolutionOperationID(tenantID, 1))
}

// OP-1: a replay finds the first result by its operation and compares it
// with the presented grant in full: a grant for another candidate or
// request under the same operation is refused.
func TestLateResultReplayOtherCandidateRefused_OP1(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	sha := rc.GrantSHA256(c.jws)
	require.NoError(t, rc.CheckLateResult(c.result, c.claims, sha, c.funding, c.receipt))
	for binding, edit := range map[string]func(g *rc.LateGrantClaims){
		"result." + rc.PrefixLateCandidate:      func(g *rc.LateGrantClaims) { g.Candidate = fq("lscc-other", 'e') },
		"result." + rc.PrefixLateCommandRequest: func(g *rc.LateGrantClaims) { g.CommandRequest = fq("lscr-other", 'e') },
		"result.grantJti":                       func(g *rc.LateGrantClaims) { g.JTI = otherUUID },
	} {
		claims := *c.claims
		edit(&claims)
		var mismatch *rc.ChainMismatchError
		require.ErrorAs(t, rc.CheckLateResult(c.result, &claims, sha, c.funding, c.receipt), &mismatch, binding)
		require.Equal(t, binding, mismatch.Binding)
	}
}

// CT-2: Seal refuses what the decoders refuse (a funding validity over 15
// minutes, an economic identity other than the dimension's).
func TestLateSealRefusesInvalid_CT2(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	f := *c.funding
	f.ValidUntil = f.ValidFrom.Add(rc.MaxFundingDecisionValidity + time.Microsecond)
	_, err := rc.Seal(&f)
	require.ErrorIs(t, err, rc.ErrInvalidObject)
	require.ErrorIs(t, err, rc.ErrFundingValidity)
	f = *c.funding
	f.EconomicIdentity = envelope.SettlementEconomicIdentityV1{Kind: "entitlement", EntitlementKey: "gpu", Unit: "second"}
	_, err = rc.Seal(&f)
	require.ErrorIs(t, err, rc.ErrEconomicIdentity)
	f = *c.funding
	f.ValidUntil = f.ValidFrom.Add(rc.MaxFundingDecisionValidity)
	_, err = rc.Seal(&f)
	require.NoError(t, err, "exactly 15 minutes is allowed")
}

// BI-2, OP-1: Operations checks the exposure it read from Billing against
// the request before deciding: an exposure of another case generation, or
// one that asked for no case, is refused.
func TestCheckLateExposure_BI2_OP1(t *testing.T) {
	t.Parallel()
	c := buildLateChain(t, lateFirst, nil)
	require.NoError(t, rc.CheckLateExposure(c.exposure, c.req.Case, c.req.Exposure))
	var mismatch *rc.ChainMismatchError

	second := buildLateChain(t, lateFirst, func(stage string, c *lateChain) {
		if stage == lstIdentity {
			dimID := c.identity.Dimension.SettlementDimensionID()
			c.identity.CaseGeneration, c.identity.ReconciliationCaseRef = 2, rc.LateSettlementCaseRef(dimID, 2)
			c.identity.CaseRequestOperationID = rc.LateSettlementCaseRequestOperationID(dimID, 2)
			c.identity.Predecessor = &rc.LatePredecessor{ReconciliationCaseRef: rc.LateSettlementCaseRef(dimID, 1), CaseGeneration: 1,
				Identity: fq("lcir-previous", '9')}
		}
	})
	require.ErrorAs(t, rc.CheckLateExposure(second.exposure, c.req.Case, second.req.Exposure), &mismatch)
	require.Equal(t, "exposure.reconciliationCaseRef", mismatch.Binding, "generation 1's request does not reach generation 2's exposure")

	require.ErrorAs(t, rc.CheckLateExposure(c.exposure, c.req.Case, second.req.Exposure), &mismatch)
	require.Equal(t, "exposure."+rc.PrefixLateExposure, mismatch.Binding)
}
