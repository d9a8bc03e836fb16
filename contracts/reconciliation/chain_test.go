package reconciliation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rc "github.com/oceanway/core/contracts/reconciliation"
)

func (c *chain) check(at time.Time) error {
	return rc.CheckChain(c.req, c.preview, c.approval, c.jit, c.cand, c.dec, at)
}

// OP-1: a sealed chain passes every check, in both variants.
func TestCheckChainAccepts_OP1(t *testing.T) {
	t.Parallel()
	for _, v := range []variant{firstGeneration, secondGeneration} {
		c := buildChain(t, v, nil)
		require.NoError(t, c.check(now))
		require.NoError(t, rc.CheckGrant(c.claims, c.cand, c.dec))
		require.NoError(t, rc.CheckExchange(c.exchange, c.claims, rc.GrantSHA256(c.jws)))
		require.NoError(t, rc.CheckApplied(c.applied, c.claims, rc.GrantSHA256(c.jws)))
		require.Equal(t, c.identity.Case(), c.req.Case)
	}
}

// caseEdits changes one field of a case identity per entry.
func caseEdits() map[string]func(*rc.Case) {
	return map[string]func(*rc.Case){
		"reconciliationCaseRef":               func(k *rc.Case) { k.ReconciliationCaseRef = "fcase-other" },
		"reconciliationGeneration":            func(k *rc.Case) { k.ReconciliationGeneration++ },
		"finalizationCaseIdentityReservation": func(k *rc.Case) { k.Identity = fq("fcir-other", 'e') },
		"billingAccountId":                    func(k *rc.Case) { k.BillingAccountID = otherUUID },
		"billingReservationId":                func(k *rc.Case) { k.BillingReservationID = otherUUID },
		"runId":                               func(k *rc.Case) { k.RunID = otherUUID },
		"billingFinalizationFenceId":          func(k *rc.Case) { k.FenceID = otherUUID },
	}
}

func otherEvidence(e []rc.EvidenceReference) []rc.EvidenceReference {
	out := append([]rc.EvidenceReference(nil), e...)
	out[0].Object = fq(out[0].Object.Ref, 'f')
	return out
}

type forgery struct {
	name, stage string
	edit        func(c *chain)
	binding     string
}

// forgeries: one field of one object per entry; the chain is resealed
// around it, so only the binding itself can catch it.
func forgeries() []forgery {
	other := fq("other", 'e')
	fs := []forgery{
		{"preview names another request", stPreview, func(c *chain) { c.preview.CommandRequest = other }, "impactPreview." + rc.PrefixCommandRequest},
		{"approval names another request", stApproval, func(c *chain) { c.approval.CommandRequest = other }, "approval." + rc.PrefixCommandRequest},
		{"approval names another preview", stApproval, func(c *chain) { c.approval.ImpactPreview = other }, "approval." + rc.PrefixImpactPreview},
		{"approval names another requester", stApproval, func(c *chain) { c.approval.RequesterWorkforcePrincipalID = "workforce:mallory" }, "approval.requesterWorkforcePrincipalId"},
		{"activation for another request", stJit, func(c *chain) { c.jit.CommandRequest = other }, "jitActivation." + rc.PrefixCommandRequest},
		{"activation of another actor", stJit, func(c *chain) { c.jit.ActorWorkforcePrincipalID = "workforce:mallory" }, "jitActivation.actorWorkforcePrincipalId"},
		{"candidate names another request", stCand, func(c *chain) { c.cand.CommandRequest = other }, "candidate." + rc.PrefixCommandRequest},
		{"candidate names another preview", stCand, func(c *chain) { c.cand.ImpactPreview = other }, "candidate." + rc.PrefixImpactPreview},
		{"candidate names another approval", stCand, func(c *chain) { c.cand.Approval = other }, "candidate." + rc.PrefixApproval},
		{"candidate names another activation", stCand, func(c *chain) { c.cand.JitActivation = other }, "candidate." + rc.PrefixJitActivation},
		{"candidate of another actor", stCand, func(c *chain) { c.cand.ActorWorkforcePrincipalID = "workforce:mallory" }, "candidate.actorWorkforcePrincipalId"},
		{"candidate with other evidence", stCand, func(c *chain) { c.cand.Evidence = otherEvidence(c.cand.Evidence) }, "candidate.investigationEvidenceReferences"},
		{"decision names another candidate", stDec, func(c *chain) { c.dec.Candidate = other }, "decision." + rc.PrefixCandidate},
		{"decision names another request", stDec, func(c *chain) { c.dec.CommandRequest = other }, "decision." + rc.PrefixCommandRequest},
		{"decision of another actor", stDec, func(c *chain) { c.dec.ActorWorkforcePrincipalID = "workforce:mallory" }, "decision.actorWorkforcePrincipalId"},
		{"decision with other evidence", stDec, func(c *chain) { c.dec.Evidence = otherEvidence(c.dec.Evidence) }, "decision.investigationEvidenceReferences"},
	}
	for field, edit := range caseEdits() {
		fs = append(fs,
			forgery{"candidate case " + field, stCand, func(c *chain) { edit(&c.cand.Case) }, "candidate." + field},
			forgery{"decision case " + field, stDec, func(c *chain) { edit(&c.dec.Case) }, "decision." + field})
	}
	return fs
}

// OP-1: every binding refuses a one-field forgery with a ChainMismatchError
// naming exactly that binding.
func TestCheckChainRefusesEachForgery_OP1(t *testing.T) {
	t.Parallel()
	for _, f := range forgeries() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			c := buildChain(t, firstGeneration, func(stage string, c *chain) {
				if stage == f.stage {
					f.edit(c)
				}
			})
			err := c.check(now)
			require.ErrorIs(t, err, rc.ErrChainMismatch)
			var mismatch *rc.ChainMismatchError
			require.ErrorAs(t, err, &mismatch)
			require.Equal(t, f.binding, mismatch.Binding)
		})
	}
}

// OP-1: the approver is never the requester, even when a forged approval
// names someone else as requester to pass its own decoder.
func TestCheckChainRefusesSelfApproval_OP1(t *testing.T) {
	t.Parallel()
	c := buildChain(t, firstGeneration, func(stage string, c *chain) {
		if stage == stApproval {
			c.approval.RequesterWorkforcePrincipalID = "workforce:mallory"
			c.approval.ApproverWorkforcePrincipalID = c.req.RequesterWorkforcePrincipalID
		}
	})
	require.ErrorIs(t, c.check(now), rc.ErrSelfApproval)

	c = buildChain(t, firstGeneration, nil)
	c.approval.ApproverWorkforcePrincipalID = c.approval.RequesterWorkforcePrincipalID
	_, err := rc.Seal(c.approval)
	require.ErrorIs(t, err, rc.ErrInvalidObject)
	require.ErrorIs(t, err, rc.ErrSelfApproval)
}

// OP-1: the activation window [notBefore, expiresAt) must contain now.
func TestCheckChainJitWindow_OP1(t *testing.T) {
	t.Parallel()
	c := buildChain(t, firstGeneration, nil)
	require.NoError(t, c.check(c.jit.NotBefore))
	require.ErrorIs(t, c.check(c.jit.NotBefore.Add(-time.Microsecond)), rc.ErrJitExpired)
	require.ErrorIs(t, c.check(c.jit.ExpiresAt), rc.ErrJitExpired)
	require.NoError(t, c.check(c.jit.ExpiresAt.Add(-time.Microsecond)))
}

// OP-1: an object edited after sealing (its quadruple no longer its
// digest) or missing is refused before any binding is trusted.
func TestCheckChainRefusesUnsealedOrMissing_OP1(t *testing.T) {
	t.Parallel()
	c := buildChain(t, firstGeneration, nil)
	c.cand.BoundWorkload = "admin.other-gateway"
	var mismatch *rc.ChainMismatchError
	require.ErrorAs(t, c.check(now), &mismatch)
	require.Equal(t, "candidate digest", mismatch.Binding)

	c = buildChain(t, firstGeneration, nil)
	require.ErrorAs(t, rc.CheckChain(c.req, c.preview, nil, c.jit, c.cand, c.dec, now), &mismatch)
	require.Equal(t, "approval missing", mismatch.Binding)
	require.ErrorAs(t, rc.CheckGrant(nil, c.cand, c.dec), &mismatch)
	require.Equal(t, "grant missing", mismatch.Binding)
}

// OP-1: the grant, the exchange result and the applied fact repeat the
// decision's bindings exactly; one changed field each is refused.
func TestCheckGrantExchangeApplied_OP1(t *testing.T) {
	t.Parallel()
	sha := func(c *chain) string { return rc.GrantSHA256(c.jws) }
	cases := []forgery{
		{"grant names another request", stClaims, func(c *chain) { c.claims.CommandRequest = fq("other", 'e') }, "grant." + rc.PrefixCommandRequest},
		{"grant names another candidate", stClaims, func(c *chain) { c.claims.Candidate = fq("other", 'e') }, "grant." + rc.PrefixCandidate},
		{"grant names another decision", stClaims, func(c *chain) {
			c.claims.Decision = fq("other", 'e')
			c.claims.ResolutionOperationID = rc.ResolutionOperationID(c.claims.Decision)
		}, "grant." + rc.PrefixDecision},
		{"grant for another subject", stClaims, func(c *chain) { c.claims.Subject = "workforce:mallory" }, "grant.sub"},
		{"grant for another workload", stClaims, func(c *chain) { c.claims.BoundWorkload = "billing.worker" }, "grant.boundWorkload"},
		{"grant for another run", stClaims, func(c *chain) { c.claims.Case.RunID = otherUUID }, "grant.runId"},
		{"grant with other evidence", stClaims, func(c *chain) { c.claims.Evidence = otherEvidence(c.claims.Evidence) }, "grant.investigationEvidenceReferences"},
		{"exchange of another grant", stExchange, func(c *chain) { c.exchange.GrantJTI = otherUUID }, "exchangeResult.grantJti"},
		{"exchange of other JWS bytes", stExchange, func(c *chain) { c.exchange.GrantSHA256 = rc.GrantSHA256(c.jws + "x") }, "exchangeResult.grantSha256"},
		{"exchange with another expiry", stExchange, func(c *chain) { c.exchange.GrantExpiresAt = c.exchange.GrantExpiresAt.Add(time.Second) }, "exchangeResult.grantExpiresAt"},
		{"exchange for another actor", stExchange, func(c *chain) { c.exchange.ActorWorkforcePrincipalID = "workforce:mallory" }, "exchangeResult.actorWorkforcePrincipalId"},
		{"exchange for another workload", stExchange, func(c *chain) { c.exchange.BoundWorkload = "admin.other-gateway" }, "exchangeResult.boundWorkload"},
		{"exchange names another decision", stExchange, func(c *chain) { c.exchange.Decision = fq("other", 'e') }, "exchangeResult." + rc.PrefixDecision},
		{"applied under another operation", stApplied, func(c *chain) {
			c.applied.Decision = fq("other", 'e')
			c.applied.ResolutionOperationID = rc.ResolutionOperationID(c.applied.Decision)
		}, "applied.resolutionOperationId"},
		{"applied to another generation", stApplied, func(c *chain) { c.applied.Case.ReconciliationGeneration = 2 }, "applied.reconciliationGeneration"},
		{"applied by another actor", stApplied, func(c *chain) { c.applied.ActorWorkforcePrincipalID = "workforce:mallory" }, "applied.actorWorkforcePrincipalId"},
		{"applied with another grant", stApplied, func(c *chain) { c.applied.GrantJTI = otherUUID }, "applied.grantJti"},
		{"applied with other JWS bytes", stApplied, func(c *chain) { c.applied.GrantSHA256 = rc.GrantSHA256("") }, "applied.grantSha256"},
		{"applied with other evidence", stApplied, func(c *chain) { c.applied.Evidence = otherEvidence(c.applied.Evidence) }, "applied.investigationEvidenceReferences"},
		{"applied names another request", stApplied, func(c *chain) { c.applied.CommandRequest = fq("other", 'e') }, "applied." + rc.PrefixCommandRequest},
	}
	for _, f := range cases {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			c := buildChain(t, firstGeneration, func(stage string, c *chain) {
				if stage == f.stage {
					f.edit(c)
				}
			})
			err := rc.CheckGrant(c.claims, c.cand, c.dec)
			if f.stage != stClaims {
				require.NoError(t, err)
				err = rc.CheckExchange(c.exchange, c.claims, sha(c))
			}
			if f.stage == stApplied {
				require.NoError(t, err)
				err = rc.CheckApplied(c.applied, c.claims, sha(c))
			}
			var mismatch *rc.ChainMismatchError
			require.ErrorAs(t, err, &mismatch)
			require.Equal(t, f.binding, mismatch.Binding)
		})
	}
}
