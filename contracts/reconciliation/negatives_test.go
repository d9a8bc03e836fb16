package reconciliation_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/goldentest"
	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

type negative struct {
	kind, name, requirement string
	base                    string // golden name of the same kind
	mutate                  func(m map[string]any)
	want                    error
}

const (
	g1 = "generation_1"
	g2 = "generation_2"
)

func set(k string, v any) func(m map[string]any) { return func(m map[string]any) { m[k] = v } }

func evidenceAt(m map[string]any, i int) map[string]any {
	return m["investigationEvidenceReferences"].([]any)[i].(map[string]any)
}

func swapEvidence(m map[string]any) {
	e := m["investigationEvidenceReferences"].([]any)
	e[0], e[1] = e[1], e[0]
}

func duplicateEvidence(m map[string]any) {
	e := m["investigationEvidenceReferences"].([]any)
	e[1] = e[0]
}

const otherUUID = "0195f4a8-0000-7000-8000-0000000000ff"

func negatives() []negative {
	I, R, P, A := rc.KindCaseIdentityReservation, rc.KindCommandRequest, rc.KindImpactPreview, rc.KindApproval
	J, C, D, G := rc.KindJitActivation, rc.KindCandidate, rc.KindDecision, rc.KindGrantClaims
	X, F := rc.KindGrantExchangeResult, rc.KindApplied
	pred := func(m map[string]any) map[string]any { return m["predecessorCase"].(map[string]any) }
	return []negative{
		{I, "binds_finalization_operation", "OP-1", g1, set("billingFinalizationOperationId", otherUUID), strict.ErrUnknownField},
		{I, "binds_triggering_work", "OP-1", g1, set("triggeringBillingFinalizationWorkRef", "bfw-1"), strict.ErrUnknownField},
		{I, "other_source_kind", "OP-1", g1, set("sourceKind", "late_settlement_exposure"), strict.ErrUnexpectedLiteral},
		{I, "generation_zero", "OP-1", g1, set("reconciliationGeneration", int64(0)), strict.ErrOutOfRange},
		{I, "generation_1_with_predecessor", "OP-1", g2, func(m map[string]any) {
			m["reconciliationGeneration"] = int64(1)
			m["reconciliationCaseRef"], m["caseRequestOperationId"] = rc.ReconciliationCaseRef(fence, 1), rc.CaseRequestOperationID(fence, 1)
		}, rc.ErrGenerationRule},
		{I, "generation_2_without_predecessor", "OP-1", g2, set("predecessorCase", map[string]any{"state": "none"}), rc.ErrGenerationRule},
		{I, "predecessor_not_direct", "OP-1", g2, func(m map[string]any) { pred(m)["predecessorReconciliationGeneration"] = int64(3) }, rc.ErrGenerationRule},
		{I, "predecessor_case_ref_not_derived", "OP-1", g2, func(m map[string]any) { pred(m)["predecessorReconciliationCaseRef"] = "fcase-other" }, rc.ErrDerivedID},
		{I, "none_with_predecessor_fields", "OP-1", g1, func(m map[string]any) { pred(m)["predecessorReconciliationGeneration"] = int64(1) }, strict.ErrMixedUnion},
		{I, "case_ref_not_derived", "OP-1", g1, set("reconciliationCaseRef", "fcase-chosen-by-hand"), rc.ErrDerivedID},
		{I, "case_request_operation_not_derived", "OP-1", g1, set("caseRequestOperationId", otherUUID), rc.ErrDerivedID},
		{I, "uppercase_uuid", "CT-2", g1, set("runId", "0195F4A8-0000-7000-8000-000000000020"), strict.ErrInvalidUUID},
		{I, "tenant_changed_same_digest", "CT-3", g1, set("workspaceId", otherUUID), digest.ErrMismatch},

		{R, "amount", "OP-1", g1, set("amount", "100"), strict.ErrUnknownField},
		{R, "replacement_snapshot", "OP-1", g1, set("replacementSettlementInputSnapshotRef", "sis-9"), strict.ErrUnknownField},
		{R, "ignore_conflict", "OP-1", g1, set("ignoreConflict", true), strict.ErrUnknownField},
		{R, "free_map", "OP-1", g1, set("parameters", map[string]any{"reservationState": "released"}), strict.ErrUnknownField},
		{R, "successor_grant", "OP-1", g1, set("grantJti", otherUUID), strict.ErrUnknownField},
		{R, "successor_operation", "OP-1", g1, set("resolutionOperationId", otherUUID), strict.ErrUnknownField},
		{R, "other_action", "OP-1", g1, set("action", "force_release"), strict.ErrUnexpectedLiteral},
		{R, "expected_revision_2", "OP-1", g1, set("expectedResolutionRevision", int64(2)), strict.ErrOutOfRange},
		{R, "evidence_empty", "OP-1", g1, set("investigationEvidenceReferences", []any{}), strict.ErrOutOfRange},
		{R, "evidence_over_32", "OP-1", g2, func(m map[string]any) {
			e := m["investigationEvidenceReferences"].([]any)
			for len(e) <= rc.MaxEvidenceReferences {
				e = append(e, e[0])
			}
			m["investigationEvidenceReferences"] = e
		}, strict.ErrOutOfRange},
		{R, "evidence_unsorted", "OP-1", g1, swapEvidence, rc.ErrEvidenceSet},
		{R, "evidence_duplicated", "OP-1", g1, duplicateEvidence, rc.ErrEvidenceSet},
		{R, "evidence_bare_digest", "CT-2", g1, func(m map[string]any) { delete(evidenceAt(m, 0), "digestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
		{R, "evidence_kind_not_snake_case", "OP-1", g1, func(m map[string]any) { evidenceAt(m, 0)["evidenceKind"] = "BillingDecision" }, strict.ErrInvalidValue},
		{R, "evidence_extra_field", "OP-1", g1, func(m map[string]any) { evidenceAt(m, 0)["verified"] = true }, strict.ErrUnknownField},
		{R, "justification_empty", "OP-1", g1, set("justification", ""), strict.ErrEmptyString},
		{R, "justification_too_long", "OP-1", g1, set("justification", strings.Repeat("x", 1001)), strict.ErrInvalidValue},
		{R, "requester_with_space", "OP-1", g1, set("requesterWorkforcePrincipalId", "alice smith"), strict.ErrInvalidValue},
		{R, "requested_at_not_canonical", "CT-2", g1, set("requestedAt", "2026-03-02T09:01:00Z"), strict.ErrInvalidTimestamp},
		{R, "justification_changed_same_digest", "CT-3", g1, set("justification", "another reason"), digest.ErrMismatch},

		{P, "ledger_effect", "OP-1", g1, func(m map[string]any) { m["effects"].(map[string]any)["ledger"] = "post" }, strict.ErrUnexpectedLiteral},
		{P, "reservation_effect", "OP-1", g1, func(m map[string]any) { m["effects"].(map[string]any)["reservation"] = "release" }, strict.ErrUnexpectedLiteral},
		{P, "effect_amount", "OP-1", g1, func(m map[string]any) { m["effects"].(map[string]any)["amount"] = "0" }, strict.ErrUnknownField},
		{P, "other_statement", "OP-1", g1, set("statement", "Releases the reservation."), strict.ErrUnexpectedLiteral},
		{P, "other_audience", "OP-1", g1, set("commandAudience", "billing_late_settlement_command"), strict.ErrUnexpectedLiteral},

		{A, "self_approval", "OP-1", g1, func(m map[string]any) { m["approverWorkforcePrincipalId"] = m["requesterWorkforcePrincipalId"] }, rc.ErrSelfApproval},
		{A, "without_approver", "OP-1", g1, func(m map[string]any) { delete(m, "approverWorkforcePrincipalId") }, strict.ErrMissingField},

		{J, "window_over_an_hour", "OP-1", g1, set("expiresAt", "2026-03-02T10:04:00.250001Z"), rc.ErrJitWindow},
		{J, "window_empty", "OP-1", g1, func(m map[string]any) { m["expiresAt"] = m["notBefore"] }, rc.ErrJitWindow},
		{J, "other_role", "OP-1", g1, set("role", "billing_admin"), strict.ErrUnexpectedLiteral},
		{J, "expiry_changed_same_digest", "CT-3", g1, set("expiresAt", "2026-03-02T09:44:00.250000Z"), digest.ErrMismatch},

		{C, "bound_workload_not_a_workload", "OP-1", g1, set("boundWorkload", "Billing Worker"), strict.ErrInvalidValue},
		{C, "other_audience", "OP-1", g1, set("commandAudience", "billing_late_settlement_command"), strict.ErrUnexpectedLiteral},
		{C, "successor_decision", "OP-1", g1, set("finalizationReconciliationResolutionDecisionRef", "frcd-1"), strict.ErrUnknownField},
		{C, "evidence_unsorted", "OP-1", g1, swapEvidence, rc.ErrEvidenceSet},
		{C, "without_jit_activation", "OP-1", g1, func(m map[string]any) { delete(m, "adminCommandJitActivationDigest") }, strict.ErrMissingField},

		{D, "successor_operation", "OP-1", g1, set("resolutionOperationId", otherUUID), strict.ErrUnknownField},
		{D, "successor_grant", "OP-1", g1, set("grantSha256", "00"), strict.ErrUnknownField},
		{D, "expected_revision_2", "OP-1", g1, set("expectedResolutionRevision", int64(2)), strict.ErrOutOfRange},
		{D, "evidence_duplicated", "OP-1", g1, duplicateEvidence, rc.ErrEvidenceSet},
		{D, "amount", "OP-1", g1, set("settledAmount", "0"), strict.ErrUnknownField},

		{G, "other_audience", "OP-1", g1, set("aud", "billing_finalization_coordinator"), strict.ErrUnexpectedLiteral},
		{G, "extra_claim", "OP-1", g1, set("scope", "billing:*"), strict.ErrUnknownField},
		{G, "amount", "OP-1", g1, set("amount", "100"), strict.ErrUnknownField},
		{G, "expires_before_not_before", "OP-1", g1, func(m map[string]any) { m["exp"] = m["nbf"] }, rc.ErrGrantLifetime},
		{G, "lifetime_too_long", "OP-1", g1, func(m map[string]any) { m["exp"] = m["nbf"].(int64) + 3600 }, rc.ErrGrantLifetime},
		{G, "fractional_numeric_date", "CT-2", g1, set("iat", 1.772442420e9+0.5), strict.ErrUnsafeInteger},
		{G, "resolution_operation_not_derived", "OP-1", g1, set("resolutionOperationId", otherUUID), rc.ErrDerivedID},
		{G, "grant_schema_version_2", "OP-1", g1, set("grantSchemaVersion", "2"), strict.ErrUnexpectedLiteral},
		{G, "evidence_unsorted", "OP-1", g1, swapEvidence, rc.ErrEvidenceSet},

		{X, "operation_not_derived", "OP-1", g1, set("commandGrantExchangeOperationId", otherUUID), rc.ErrDerivedID},
		{X, "assertion_jti_other_bytes", "OP-1", g1, set("actorAssertionJti", "Assertion-7f3a"), rc.ErrDerivedID},
		{X, "grant_sha256_uppercase", "OP-1", g1, func(m map[string]any) { m["grantSha256"] = "A" + m["grantSha256"].(string)[1:] }, strict.ErrInvalidValue},
		{X, "grant_expiry_changed_same_digest", "CT-3", g1, set("grantExpiresAt", "2026-03-02T09:13:00.000000Z"), digest.ErrMismatch},

		{F, "resolution_revision_2", "OP-1", g1, set("resolutionRevision", int64(2)), strict.ErrOutOfRange},
		{F, "resolution_operation_not_derived", "OP-1", g1, set("resolutionOperationId", otherUUID), rc.ErrDerivedID},
		{F, "fence_revision_zero", "OP-1", g1, set("finalizationFenceRevision", int64(0)), strict.ErrOutOfRange},
		{F, "amount", "OP-1", g1, set("settledAmount", "10"), strict.ErrUnknownField},
		{F, "reservation_state", "OP-1", g1, set("reservationState", "released"), strict.ErrUnknownField},
		{F, "evidence_duplicated", "OP-1", g1, duplicateEvidence, rc.ErrEvidenceSet},
		{F, "other_action", "OP-1", g1, set("action", "settle"), strict.ErrUnexpectedLiteral},
	}
}

type manifestEntry struct {
	Kind        string `json:"kind"`
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Expected    string `json:"expected"`
}

// CT-2, CT-3, OP-1: every negative artefact is rejected with its named reason.
func TestNegatives_CT2_OP1(t *testing.T) {
	t.Parallel()
	gs := goldens(t)
	var entries []manifestEntry
	for _, n := range append(append(negatives(), lateNegatives()...), lateChainNegatives()...) {
		var base map[string]any
		for _, g := range gs {
			if g.kind == n.kind && g.name == n.base {
				base = g.obj.ToJSON()
			}
		}
		require.NotNil(t, base, n.kind+"/"+n.base)
		n.mutate(base)
		file := filepath.Join(n.kind, n.name+".json")
		goldentest.Check(t, filepath.Join("testdata", "negative", file), goldentest.Indent(t, base))
		raw, err := os.ReadFile(filepath.Join("testdata", "negative", file))
		require.NoError(t, err)
		require.ErrorIs(t, contract(t, n.kind).Validate(raw), n.want, file)
		entries = append(entries, manifestEntry{Kind: n.kind, File: filepath.ToSlash(file), Requirement: n.requirement, Expected: n.want.Error()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	b, err := json.MarshalIndent(entries, "", "  ")
	require.NoError(t, err)
	goldentest.Check(t, filepath.Join("testdata", "negative", "manifest.json"), append(b, '\n'))
}
