package meterfacts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/strict"
)

var at = time.Date(2026, 12, 1, 12, 0, 0, 123456000, time.UTC)

func q(ref, fill string) strict.Quadruple {
	v := ""
	for len(v) < 64 {
		v += fill
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: v[:64]}
}

const (
	attemptID = "0195f4a8-0000-7000-8000-000000000060"
	workOp    = "0195f4a8-0000-7000-8000-000000000070"
)

func sealed[T meterfacts.Sealed](t *testing.T, x T) T {
	t.Helper()
	_, err := meterfacts.Seal(x)
	require.NoError(t, err)
	return x
}

type golden struct {
	kind, name string
	obj        meterfacts.Sealed
}

func costFact(t *testing.T) *meterfacts.ProviderCostFact {
	return sealed(t, &meterfacts.ProviderCostFact{
		Fact: strict.Quadruple{Ref: "pcf-1"}, Work: q("miw-1", "a1"), OperationID: workOp, WorkGeneration: 1,
		RunID: "0195f4a8-0000-7000-8000-000000000020", RunStepID: "0195f4a8-0000-7000-8000-000000000050",
		ExecutionAttemptID: attemptID, GatewayDeploymentID: "gw-eu-1", SourceEvidenceDimensionKey: "cost.usd_micros",
		AttemptManifest: q("aem-1", "b2"), AttemptRouteBinding: q("arb-1", "c3"), GatewayRouteSnapshot: q("grs-1", "d4"),
		CostAvailability: q("gas-1", "e5"), CostAvailabilityStateVersion: 2, ProviderEvidence: q("gpe-1", "f6"),
		ProviderQuantity: "1234500", Currency: "USD", QuantityScale: 6, Amount: "1.2345", RecordedAt: at,
	})
}

func processing(t *testing.T, state, reason string, cost *strict.Quadruple) *meterfacts.ProviderCostAvailabilityProcessingFact {
	outcome, _ := meterfacts.OutcomeFor(state)
	return sealed(t, &meterfacts.ProviderCostAvailabilityProcessingFact{
		Processing: strict.Quadruple{Ref: "pcap-" + state}, Work: q("miw-1", "a1"), OperationID: workOp, WorkGeneration: 1,
		LaneTriggerDigest:  digest.Digest{Algorithm: digest.JCSSHA256V1, Value: q("", "9a").Digest},
		ExecutionAttemptID: attemptID, GatewayDeploymentID: "gw-eu-1", SourceEvidenceDimensionKey: "cost.usd_micros",
		AttemptManifest: q("aem-1", "b2"), CostAvailability: q("gas-1", "e5"), CostAvailabilityStateVersion: 2,
		AvailabilityState: state, StateReasonCode: reason, Outcome: outcome, ProviderCostFact: cost, ProcessedAt: at,
	})
}

func validation(t *testing.T, purpose string, current bool) *meterfacts.SettlementInputCurrentValidationReceipt {
	r := &meterfacts.SettlementInputCurrentValidationReceipt{
		Receipt: strict.Quadruple{Ref: "sicvr-" + purpose}, Purpose: purpose, OperationID: "0195f4a8-0000-7000-8000-000000000080",
		InputManifestDigest:   digest.Digest{Algorithm: digest.JCSSHA256V1, Value: q("", "7c").Digest},
		SettlementDimensionID: "0195f4a8-0000-7000-8000-000000000090", Validated: q("sis-1", "5d"), ValidatedStateVersion: 1,
		Current: current, ValidatedAt: at,
	}
	if !current {
		r.CurrentSnapshot, r.CurrentStateVersion = q("sis-2", "6e"), 2
	}
	return sealed(t, r)
}

func settlementConflict(t *testing.T, ref, cause string, version int64) *meterfacts.SettlementInputConflictFact {
	return sealed(t, &meterfacts.SettlementInputConflictFact{Fact: strict.Quadruple{Ref: ref},
		SettlementDimensionID: "0195f4a8-0000-7000-8000-000000000090", Validated: q("sis-1", "5d"), ValidatedStateVersion: version,
		Blocked: q("miwb-1", "4a"), BlockingCauseKind: cause, OwnerConflictFact: q("gec-1", "3b"),
		ReasonCode: meterfacts.ConflictSourceOwnerConflict, DetectedAt: at})
}

func goldens(t *testing.T) []golden {
	cf := costFact(t)
	return []golden{
		{meterfacts.KindSettlementInputConflictFact, "gateway_usage_owner_conflict", settlementConflict(t, "sicf-1", "gateway_usage_owner_conflict", 1)},
		{meterfacts.KindSettlementInputConflictFact, "execution_eligibility_owner_conflict", settlementConflict(t, "sicf-2", "execution_eligibility_owner_conflict", 2)},
		{meterfacts.KindSettlementInputCurrentValidationReceipt, "finalization_current", validation(t, meterfacts.PurposeFinalization, true)},
		{meterfacts.KindSettlementInputCurrentValidationReceipt, "billing_catch_up_fence_not_current", validation(t, meterfacts.PurposeBillingCatchUpFence, false)},
		{meterfacts.KindSettlementInputCurrentValidationReceipt, "late_settlement_command_current", validation(t, meterfacts.PurposeLateSettlementCommand, true)},
		{meterfacts.KindSettlementInputCurrentValidationReceipt, "post_finalization_transition_not_current", validation(t, meterfacts.PurposePostFinalizationTransition, false)},
		{meterfacts.KindProviderCostFact, "usd_micros", cf},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "available_applied", processing(t, meterfacts.AvailabilityAvailable, "provider_reported", &cf.Fact)},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "waiting_for_evidence", processing(t, meterfacts.AvailabilityPending, "provider_report_pending", nil)},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "no_cost_evidence_not_reported", processing(t, meterfacts.AvailabilityNotReported, "provider_silent", nil)},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "no_cost_evidence_unavailable", processing(t, meterfacts.AvailabilityUnavailable, "provider_cost_unavailable", nil)},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "reconciliation_required", processing(t, meterfacts.AvailabilityConflicting, "provider_reports_disagree", nil)},
	}
}

func contract(t *testing.T, kind string) meterfacts.Contract {
	t.Helper()
	for _, c := range meterfacts.Contracts() {
		if c.Name == kind {
			return c
		}
	}
	t.Fatalf("unknown kind %s", kind)
	return meterfacts.Contract{}
}

// CT-4: every golden is regenerated from the fixtures and byte-compared; the
// raw file decodes strictly and its embedded digest recomputes.
func TestGolden_CT4(t *testing.T) {
	t.Parallel()
	for _, g := range goldens(t) {
		c := contract(t, g.kind)
		dir := filepath.Join("testdata", "golden", g.kind, g.name)
		goldentest.Check(t, filepath.Join(dir, "raw.json"), goldentest.Indent(t, g.obj.ToJSON()))
		raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
		require.NoError(t, err)
		require.NoError(t, c.Validate(raw), g.name)
		canonical, err := jcs.Canonicalize(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "canonical.json"), canonical)
		d, err := c.Digest(raw)
		require.NoError(t, err)
		goldentest.Check(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
		require.Equal(t, g.obj.Quad().Digest, d.Value, "embedded digest is the candidate digest")
	}
}

// The typed decoders return exactly the object that was sealed.
func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range goldens(t) {
		body, err := jcs.Marshal(g.obj.ToJSON())
		require.NoError(t, err)
		var back meterfacts.Sealed
		switch g.kind {
		case meterfacts.KindProviderCostFact:
			back, err = meterfacts.DecodeProviderCostFact(body)
		case meterfacts.KindProviderCostAvailabilityProcessingFact:
			back, err = meterfacts.DecodeProviderCostAvailabilityProcessingFact(body)
		case meterfacts.KindSettlementInputCurrentValidationReceipt:
			back, err = meterfacts.DecodeSettlementInputCurrentValidationReceipt(body)
		case meterfacts.KindSettlementInputConflictFact:
			back, err = meterfacts.DecodeSettlementInputConflictFact(body)
		}
		require.NoError(t, err)
		require.Equal(t, g.obj, back, g.kind+"/"+g.name)
	}
}

type negative struct {
	kind, name, requirement, base string
	mutate                        func(m map[string]any)
	want                          error
}

func negatives() []negative {
	v := meterfacts.KindSettlementInputCurrentValidationReceipt
	return []negative{
		{v, "unknown_purpose", "MET-VSC", "finalization_current", func(m map[string]any) { m["purpose"] = "metering_fact_construction" }, strict.ErrUnknownEnum},
		{v, "expires_at", "MET-VSC", "finalization_current", func(m map[string]any) { m["expiresAt"] = "2026-12-01T12:05:00.000000Z" }, strict.ErrUnknownField},
		{v, "not_current_not_later", "MET-VSC", "billing_catch_up_fence_not_current", func(m map[string]any) {
			m["settlementInputStateVersion"] = int64(3)
		}, meterfacts.ErrNotCurrentRule},
		{v, "current_carries_current_snapshot", "MET-VSC", "finalization_current", func(m map[string]any) {
			m["result"].(map[string]any)["currentSettlementInputStateVersion"] = int64(2)
		}, strict.ErrMixedUnion},
		{v, "bare_input_manifest_digest", "CT-3", "finalization_current", func(m map[string]any) { delete(m, "inputManifestDigestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
		{v, "other_operation_same_digest", "CT-3", "late_settlement_command_current", func(m map[string]any) {
			m["validationOperationId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, digest.ErrMismatch},
		// ME-2: a missing cost is never a zero cost, and only available writes a cost.
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "not_reported_claims_applied", "ME-2", "no_cost_evidence_not_reported", func(m map[string]any) {
			m["outcome"] = map[string]any{"processingOutcome": "available_applied", "providerCostFactRef": "pcf-1", "providerCostFactSchemaVersion": "1",
				"providerCostFactDigestAlgorithmVersion": "jcs-sha256-v1", "providerCostFactDigest": q("", "11").Digest}
		}, meterfacts.ErrOutcomeState},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "no_cost_with_zero_amount", "ME-2", "no_cost_evidence_unavailable", func(m map[string]any) {
			m["outcome"].(map[string]any)["amount"] = "0"
		}, strict.ErrMixedUnion},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "conflicting_not_reconciliation", "ME-2", "reconciliation_required", func(m map[string]any) {
			m["outcome"] = map[string]any{"processingOutcome": "no_cost_evidence"}
		}, meterfacts.ErrOutcomeState},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "applied_without_cost_fact", "ME-2", "available_applied", func(m map[string]any) {
			m["outcome"] = map[string]any{"processingOutcome": "available_applied"}
		}, strict.ErrMissingField},
		{meterfacts.KindProviderCostAvailabilityProcessingFact, "unknown_outcome", "CT-2", "waiting_for_evidence", func(m map[string]any) {
			m["outcome"] = map[string]any{"processingOutcome": "zero_cost"}
		}, strict.ErrUnknownEnum},
		// Issue 32: Metering's settlement input conflict fact names an owner branch only, and its own reason.
		{meterfacts.KindSettlementInputConflictFact, "processing_cause", "BI-3", "gateway_usage_owner_conflict", func(m map[string]any) {
			m["blockingCauseKind"] = "eligibility_processing_conflict"
		}, strict.ErrUnknownEnum},
		{meterfacts.KindSettlementInputConflictFact, "bare_blocked_ref", "CT-3", "gateway_usage_owner_conflict", func(m map[string]any) {
			delete(m, "meteringInputWorkAttemptBlockedDigest")
		}, strict.ErrMissingField},
		{meterfacts.KindSettlementInputConflictFact, "other_snapshot_same_digest", "CT-3", "gateway_usage_owner_conflict", func(m map[string]any) {
			m["settlementInputStateVersion"] = int64(7)
		}, digest.ErrMismatch},
		{meterfacts.KindProviderCostFact, "customer_charge", "ME-2", "usd_micros", func(m map[string]any) { m["customerChargingImpact"] = "charge" }, strict.ErrUnexpectedLiteral},
		{meterfacts.KindProviderCostFact, "float_amount", "CT-2", "usd_micros", func(m map[string]any) { m["amount"] = "9e-2" }, strict.ErrInvalidValue},
		{meterfacts.KindProviderCostFact, "trimmed_dimension", "CT-2", "usd_micros", func(m map[string]any) { delete(m, "sourceEvidenceDimensionKey") }, strict.ErrMissingField},
		{meterfacts.KindProviderCostFact, "amount_changed_same_digest", "CT-3", "usd_micros", func(m map[string]any) { m["amount"] = "0.9" }, digest.ErrMismatch},
		{meterfacts.KindProviderCostFact, "bare_digest", "CT-3", "usd_micros", func(m map[string]any) { delete(m, "providerCostFactDigestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
	}
}

type manifestEntry struct {
	Kind        string `json:"kind"`
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Expected    string `json:"expected"`
}

// CT-2/CT-3/ME-2/MET-VSC (validateSettlementInputCurrent): every negative artefact is rejected with its named reason.
func TestNegatives_CT2_ME2_MEVAL(t *testing.T) {
	t.Parallel()
	gs := goldens(t)
	var entries []manifestEntry
	for _, n := range negatives() {
		var base meterfacts.Sealed
		for _, g := range gs {
			if g.kind == n.kind && g.name == n.base {
				base = g.obj
			}
		}
		require.NotNil(t, base, n.kind+"/"+n.base)
		m := base.ToJSON()
		n.mutate(m)
		file := filepath.Join(n.kind, n.name+".json")
		goldentest.Check(t, filepath.Join("testdata", "negative", file), goldentest.Indent(t, m))
		raw, err := os.ReadFile(filepath.Join("testdata", "negative", file))
		require.NoError(t, err)
		require.ErrorIs(t, contract(t, n.kind).Validate(raw), n.want, file)
		entries = append(entries, manifestEntry{Kind: n.kind, File: file, Requirement: n.requirement, Expected: n.want.Error()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	b, err := json.MarshalIndent(entries, "", "  ")
	require.NoError(t, err)
	goldentest.Check(t, filepath.Join("testdata", "negative", "manifest.json"), append(b, '\n'))
}

// Seal refuses an object that does not satisfy its description.
func TestSealRefusesInvalid(t *testing.T) {
	t.Parallel()
	f := &meterfacts.ProviderCostFact{Fact: strict.Quadruple{Ref: "pcf-x"}, Amount: "-1"}
	_, err := meterfacts.Seal(f)
	require.ErrorIs(t, err, meterfacts.ErrInvalidObject)
}
