package execution_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

type negative struct {
	kind, name, requirement string
	base                    string // golden name of the same kind
	mutate                  func(m map[string]any)
	want                    error
}

func negatives() []negative {
	return []negative{
		{execution.KindRunAdmissionManifest, "unknown_field", "CT-2", "with_project", func(m map[string]any) { m["latest"] = true }, strict.ErrUnknownField},
		{execution.KindRunAdmissionManifest, "bare_digest", "CT-3", "with_project", func(m map[string]any) { delete(m, "runAdmissionManifestDigestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
		{execution.KindRunAdmissionManifest, "digest_does_not_recompute", "CT-3", "with_project", func(m map[string]any) { m["reservedAmount"] = "1501" }, digest.ErrMismatch},
		{execution.KindRunAdmissionManifest, "float_amount", "CT-2", "with_project", func(m map[string]any) { m["reservedAmount"] = "15.5" }, strict.ErrInvalidValue},
		{execution.KindRunAdmissionManifest, "unknown_schema_version", "CT-2", "with_project", func(m map[string]any) { m["runAdmissionManifestSchemaVersion"] = "2" }, strict.ErrUnknownSchemaVersion},
		{execution.KindRunExecutionToken, "other_audience", "EX-1", "with_project", func(m map[string]any) { m["workloadAudience"] = "billing_finalization" }, strict.ErrUnexpectedLiteral},
		{execution.KindRunExecutionToken, "bare_manifest_ref", "EX-1", "with_project", func(m map[string]any) {
			delete(m, "runAdmissionManifestSchemaVersion")
			delete(m, "runAdmissionManifestDigestAlgorithmVersion")
			delete(m, "runAdmissionManifestDigest")
		}, strict.ErrMissingField},
		{execution.KindRunExecutionToken, "digest_does_not_recompute", "CT-3", "with_project", func(m map[string]any) { m["runId"] = "0195f4a8-0000-7000-8000-0000000000ff" }, digest.ErrMismatch},
		{execution.KindAttemptExecutionManifest, "missing_gateway_deployment", "CT-2", "first_attempt", func(m map[string]any) { delete(m, "gatewayDeploymentId") }, strict.ErrMissingField},
		{execution.KindAttemptExecutionManifest, "zero_routing_revision", "CT-2", "first_attempt", func(m map[string]any) { m["routingPolicyRevision"] = 0 }, strict.ErrOutOfRange},
		{execution.KindAttemptExecutionManifest, "charge_dimension_missing", "ME-1", "first_attempt", func(m map[string]any) { m["chargeDimensionKeys"] = []any{"text.input_tokens"} }, execution.ErrChargeDimensionSet},
		{execution.KindAttemptExecutionManifest, "charge_dimension_unsorted", "ME-1", "first_attempt", func(m map[string]any) {
			m["chargeDimensionKeys"] = []any{"text.output_tokens", "text.input_tokens"}
		}, execution.ErrChargeDimensionSet},
		{execution.KindAttemptExecutionManifest, "charge_dimensions_empty", "ME-1", "first_attempt", func(m map[string]any) { m["chargeDimensionKeys"] = []any{} }, strict.ErrOutOfRange},
		{execution.KindAttemptExecutionManifest, "charge_dimensions_missing", "ME-1", "first_attempt", func(m map[string]any) { delete(m, "chargeDimensionKeys") }, strict.ErrMissingField},
		{execution.KindAttemptExecutionManifest, "unknown_dimension_registry", "ME-1", "first_attempt", func(m map[string]any) {
			m["chargeDimensionRegistryVersion"] = "oceanway-charge-dimension-registry@0"
		}, strict.ErrUnexpectedLiteral},
		{execution.KindAttemptExecutionManifest, "unregistered_output_contract", "ME-1", "first_attempt", func(m map[string]any) { m["outputContractRef"] = "output-contract/unknown@1" }, execution.ErrChargeDimensionSet},
		{execution.KindAttemptExecutionManifest, "changed_route_same_digest", "CT-3", "first_attempt", func(m map[string]any) { m["modelDeploymentId"] = "model-deploy/other" }, digest.ErrMismatch},
		{execution.KindExecutionEligibilityFact, "not_dispatched_without_fact", "GW-1", "not_dispatched", func(m map[string]any) {
			m["disposition"] = map[string]any{"dispatchDisposition": "not_dispatched"}
		}, strict.ErrMissingField},
		{execution.KindExecutionEligibilityFact, "dispatched_with_not_dispatched_fact", "GW-1", "dispatched", func(m map[string]any) {
			d := m["disposition"].(map[string]any)
			d["attemptNotDispatchedFactRef"] = "and-1"
		}, strict.ErrMixedUnion},
		{execution.KindExecutionEligibilityFact, "unknown_disposition", "EX-3", "dispatched", func(m map[string]any) {
			m["disposition"] = map[string]any{"dispatchDisposition": "maybe"}
		}, strict.ErrUnknownEnum},
		{execution.KindRunAttemptSetManifest, "count_differs", "EX-2", "two_attempts", func(m map[string]any) { m["attemptCount"] = int64(1) }, execution.ErrAttemptSetRule},
		{execution.KindRunAttemptSetManifest, "unsorted", "EX-2", "two_attempts", func(m map[string]any) {
			a := m["attempts"].([]any)
			a[0], a[1] = a[1], a[0]
		}, execution.ErrAttemptSetRule},
		{execution.KindRunAttemptSetManifest, "duplicate_attempt", "EX-2", "two_attempts", func(m map[string]any) {
			a := m["attempts"].([]any)
			a[1] = a[0]
		}, execution.ErrAttemptSetRule},
		{execution.KindRunAttemptSetManifest, "empty_without_count", "EX-2", "empty", func(m map[string]any) { delete(m, "attemptCount") }, strict.ErrMissingField},
		{execution.KindRunExecutionFinalizationFact, "attempt_dropped", "EX-2", "two_attempts", func(m map[string]any) {
			m["attempts"] = m["attempts"].([]any)[:1]
			m["attemptCount"] = int64(1)
		}, digest.ErrMismatch},
		{execution.KindRunExecutionFinalizationFact, "state_version_not_closed", "EX-2", "two_attempts", func(m map[string]any) {
			m["runExecutionFinalizationStateVersion"] = int64(3)
		}, strict.ErrOutOfRange},
		{execution.KindAttemptNotDispatchedFact, "bare_rejection_ref", "GW-1", "no_capacity", func(m map[string]any) {
			delete(m, "gatewayPreBindingRejectionFactDigest")
		}, strict.ErrMissingField},
		{execution.KindAvailabilitySnapshot, "v1_with_predecessor", "GW-2", "pending_v1", func(m map[string]any) {
			m["predecessor"] = map[string]any{"state": "present", "predecessorAvailabilityRef": "gas-0", "predecessorAvailabilitySchemaVersion": "1",
				"predecessorAvailabilityDigestAlgorithmVersion": "jcs-sha256-v1", "predecessorAvailabilityDigest": "3333333333333333333333333333333333333333333333333333333333333333",
				"predecessorStateVersion": int64(1)}
		}, execution.ErrAvailabilityRule},
		{execution.KindAvailabilitySnapshot, "version_gap", "GW-2", "available_v2", func(m map[string]any) { m["stateVersion"] = int64(3) }, execution.ErrAvailabilityRule},
		{execution.KindAvailabilitySnapshot, "available_without_evidence", "GW-2", "available_v2", func(m map[string]any) {
			m["availableEvidence"] = map[string]any{"state": "none"}
		}, execution.ErrAvailabilityRule},
		{execution.KindAvailabilitySnapshot, "unknown_state", "GW-2", "pending_v1", func(m map[string]any) { m["availabilityState"] = "maybe" }, strict.ErrUnknownEnum},
		{execution.KindAvailabilityCurrentValidationReceipt, "not_current_not_later", "GW-2", "not_current", func(m map[string]any) {
			m["result"].(map[string]any)["currentStateVersion"] = int64(1)
		}, strict.ErrOutOfRange},
		{execution.KindAvailabilityCurrentValidationReceipt, "generic_purpose", "GW-2", "current", func(m map[string]any) { m["purpose"] = "any" }, strict.ErrUnknownEnum},
		{execution.KindProviderEvidence, "float_quantity", "GW-2", "usage_tokens", func(m map[string]any) { m["quantity"] = "1.20e3" }, strict.ErrInvalidValue},
		{execution.KindAttemptRouteBinding, "route_changed", "GW-1", "text", func(m map[string]any) { m["supplyId"] = "supply/other" }, digest.ErrMismatch},
		{execution.KindGatewayPreBindingRejectionFact, "carries_binding", "GW-1", "no_capacity", func(m map[string]any) { m["attemptRouteBindingRef"] = "arb-1" }, strict.ErrUnknownField},
		{execution.KindRunExecutionFinalizationReceipt, "other_purpose", "BI-1", "two_attempts", func(m map[string]any) { m["purpose"] = "metering_input" }, strict.ErrUnexpectedLiteral},
		{execution.KindRunExecutionFinalizationReceipt, "other_operation", "BI-1", "two_attempts", func(m map[string]any) {
			m["billingFinalizationOperationId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, digest.ErrMismatch},
		{execution.KindRunExecutionFinalizationReceipt, "without_input_manifest", "BI-1", "two_attempts", func(m map[string]any) {
			delete(m, "finalizationInputManifestDigest")
		}, strict.ErrMissingField},
		{execution.KindRunExecutionFinalizationConflictFact, "no_reason", "EX-2", "digest_differs", func(m map[string]any) { delete(m, "reasonCode") }, strict.ErrMissingField},
		{execution.KindExecutionEligibilityConflictFact, "case_ref", "EX-3", "fact_differs", func(m map[string]any) { m["reconciliationCaseRef"] = "case-1" }, strict.ErrUnknownField},
		{execution.KindExecutionEligibilityConflictFact, "other_attempt_same_digest", "CT-3", "fact_differs", func(m map[string]any) {
			m["executionAttemptId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, digest.ErrMismatch},
		{execution.KindGatewayEvidenceConflictFact, "unknown_reason", "GW-2", "usage_report_disagrees", func(m map[string]any) { m["reasonCode"] = "looks_odd" }, strict.ErrUnknownEnum},
		{execution.KindGatewayEvidenceConflictFact, "bare_evidence_ref", "GW-2", "usage_report_disagrees", func(m map[string]any) { delete(m, "providerEvidenceDigest") }, strict.ErrMissingField},
		{execution.KindGatewayEvidenceConflictFact, "quantity_changed", "GW-2", "usage_report_disagrees", func(m map[string]any) { m["conflictingQuantity"] = "1301" }, digest.ErrMismatch},
	}
}

type manifestEntry struct {
	Kind        string `json:"kind"`
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Expected    string `json:"expected"`
}

// CT-2/CT-3: every negative artefact is rejected with its named reason.
func TestNegatives_CT2(t *testing.T) {
	t.Parallel()
	gs := goldens(t)
	var entries []manifestEntry
	for _, n := range negatives() {
		var base execution.Sealed
		for _, g := range gs {
			if g.kind == n.kind && g.name == n.base {
				base = g.obj
			}
		}
		require.NotNil(t, base, n.kind+"/"+n.base)
		m := base.ToJSON()
		n.mutate(m)
		doc := indent(t, m)
		file := filepath.Join(n.kind, n.name+".json")
		checkFile(t, filepath.Join("testdata", "negative", file), doc)
		raw, err := os.ReadFile(filepath.Join("testdata", "negative", file))
		require.NoError(t, err)
		err = contract(t, n.kind).Validate(raw)
		require.ErrorIs(t, err, n.want, file)
		entries = append(entries, manifestEntry{Kind: n.kind, File: file, Requirement: n.requirement, Expected: n.want.Error()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	b, err := json.MarshalIndent(entries, "", "  ")
	require.NoError(t, err)
	checkFile(t, filepath.Join("testdata", "negative", "manifest.json"), append(b, '\n'))
}

// Seal refuses an object that does not satisfy its description.
func TestSealRefusesInvalid(t *testing.T) {
	t.Parallel()
	m := manifestFixture("")
	m.RunID = "not-a-uuid"
	_, err := execution.Seal(m)
	require.ErrorIs(t, err, execution.ErrInvalidObject)
	require.ErrorIs(t, err, strict.ErrInvalidUUID)
	_, err = jcs.Marshal(m.ToJSON())
	require.NoError(t, err)
}
