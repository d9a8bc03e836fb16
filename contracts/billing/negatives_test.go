package billing_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/strict"
)

type negative struct {
	kind, name, requirement string
	base                    string // golden name of the same kind
	mutate                  func(m map[string]any)
	want                    error
}

func dims(m map[string]any) []any { return m["dimensions"].([]any) }

func entry(m map[string]any, set string, i int) map[string]any {
	return m[set].([]any)[i].(map[string]any)
}

func negatives() []negative {
	M, B, D := billing.KindFinalizationInputManifest, billing.KindFinalizationValidationBundle, billing.KindBillingFinalizationDecision
	return []negative{
		{M, "unknown_field", "CT-2", "mixed_dispatch", func(m map[string]any) { m["verified"] = true }, strict.ErrUnknownField},
		{M, "dimensions_unsorted", "BI-1", "mixed_dispatch", func(m map[string]any) {
			d := dims(m)
			d[0], d[1] = d[1], d[0]
		}, billing.ErrManifestRule},
		{M, "dimension_duplicated", "BI-1", "mixed_dispatch", func(m map[string]any) {
			d := dims(m)
			d[1] = d[0]
		}, billing.ErrManifestRule},
		{M, "count_differs", "BI-1", "mixed_dispatch", func(m map[string]any) { m["dimensionCount"] = int64(2) }, billing.ErrManifestRule},
		{M, "target_total_differs", "BI-1", "mixed_dispatch", func(m map[string]any) { m["targetTotal"] = "200" }, billing.ErrManifestRule},
		{M, "settlement_dimension_not_derived", "BI-1", "mixed_dispatch", func(m map[string]any) {
			dims(m)[0].(map[string]any)["settlementDimensionId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, billing.ErrManifestRule},
		{M, "gateway_availability_on_not_dispatched", "BI-1", "mixed_dispatch", func(m map[string]any) {
			dims(m)[2].(map[string]any)["gatewayAvailability"] = dims(m)[0].(map[string]any)["gatewayAvailability"]
		}, billing.ErrManifestRule},
		{M, "dispatched_without_availability", "BI-1", "mixed_dispatch", func(m map[string]any) {
			dims(m)[0].(map[string]any)["gatewayAvailability"] = map[string]any{"state": "none"}
		}, billing.ErrManifestRule},
		{M, "float_target", "CT-2", "mixed_dispatch", func(m map[string]any) { dims(m)[1].(map[string]any)["targetAmount"] = "8.05e1" }, strict.ErrInvalidValue},
		{M, "unknown_input_state", "BI-1", "mixed_dispatch", func(m map[string]any) { dims(m)[0].(map[string]any)["inputState"] = "verified" }, strict.ErrUnknownEnum},
		{M, "input_changed_same_digest", "CT-3", "mixed_dispatch", func(m map[string]any) {
			dims(m)[0].(map[string]any)["settlementInputStateVersion"] = int64(2)
		}, digest.ErrMismatch},
		{B, "metering_echoes_other_operation", "BI-1", "mixed_dispatch", func(m map[string]any) {
			entry(m, "meteringReceipts", 0)["billingFinalizationOperationId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, billing.ErrBundleRule},
		{B, "execution_echoes_other_manifest", "BI-1", "mixed_dispatch", func(m map[string]any) {
			m["executionReceipt"].(map[string]any)["finalizationInputManifestDigest"] = "9999999999999999999999999999999999999999999999999999999999999999"
		}, billing.ErrBundleRule},
		{B, "metering_count_differs", "BI-1", "mixed_dispatch", func(m map[string]any) { m["meteringReceiptCount"] = int64(2) }, billing.ErrBundleRule},
		{B, "gateway_duplicated", "BI-1", "mixed_dispatch", func(m map[string]any) {
			g := m["gatewayReceipts"].([]any)
			g[1] = g[0]
		}, billing.ErrBundleRule},
		{B, "without_execution_receipt", "BI-1", "mixed_dispatch", func(m map[string]any) { delete(m, "executionReceipt") }, strict.ErrMissingField},
		{B, "metering_other_purpose", "BI-1", "mixed_dispatch", func(m map[string]any) {
			entry(m, "meteringReceipts", 0)["purpose"] = "billing_catch_up_fence"
		}, strict.ErrUnexpectedLiteral},
		{B, "verified_boolean_instead_of_set", "BI-1", "empty_run", func(m map[string]any) { m["gatewayVerified"] = true }, strict.ErrUnknownField},
		// Issue 32: the execution conflict fact is whole, and only with execution_conflicting.
		{D, "execution_conflict_partial", "BI-1", "execution_conflicting", func(m map[string]any) {
			delete(m["outcome"].(map[string]any), "runExecutionFinalizationConflictDigest")
		}, billing.ErrDecisionRule},
		{D, "execution_conflict_other_reason", "BI-1", "execution_conflicting", func(m map[string]any) {
			m["outcome"].(map[string]any)["reasonCode"] = billing.ReasonTargetAboveReservation
		}, billing.ErrDecisionRule},
		{D, "amounts_do_not_add_up", "BI-1", "settle_and_release_remainder", func(m map[string]any) {
			m["outcome"].(map[string]any)["releasedAmount"] = "1299"
		}, billing.ErrDecisionRule},
		{D, "settled_above_reservation", "BI-1", "settle_and_release_remainder", func(m map[string]any) {
			m["reservedAmount"] = "100"
			m["outcome"].(map[string]any)["releasedAmount"] = "0"
		}, billing.ErrDecisionRule},
		{D, "settled_is_not_the_target", "BI-1", "settle_and_release_remainder", func(m map[string]any) {
			o := m["outcome"].(map[string]any)
			o["settledAmount"], o["releasedAmount"] = "200", "1300"
		}, billing.ErrDecisionRule},
		{D, "release_all_settles", "BI-1", "release_all", func(m map[string]any) {
			o := m["outcome"].(map[string]any)
			o["settledAmount"], o["releasedAmount"] = "1", "1499"
		}, strict.ErrUnexpectedLiteral},
		{D, "blocked_with_amounts", "BI-1", "blocked", func(m map[string]any) { m["outcome"].(map[string]any)["settledAmount"] = "0" }, strict.ErrMixedUnion},
		{D, "success_without_bundle", "BI-1", "settle_and_release_remainder", func(m map[string]any) {
			delete(m["outcome"].(map[string]any), "finalizationValidationBundleDigest")
		}, strict.ErrMissingField},
		{D, "unknown_reason", "BI-1", "reconciliation_required", func(m map[string]any) {
			m["outcome"].(map[string]any)["reasonCode"] = "operator_said_so"
		}, strict.ErrUnknownEnum},
	}
}

// CT-2/CT-3/BI-1: every negative artefact is rejected with its named reason.
func TestBI1Negatives(t *testing.T) {
	t.Parallel()
	gs := goldens(t)
	var entries []manifestEntry
	for _, n := range negatives() {
		var base billing.Sealed
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

// Seal refuses a decision that breaks its amount rules: nothing above the
// reservation can even be built.
func TestBI1SealRefusesSettlingAboveTheReservation(t *testing.T) {
	t.Parallel()
	d := *build(t).decisions["settle_and_release_remainder"]
	d.ReservedAmount, d.ReleasedAmount = "100", "0"
	_, err := billing.Seal(&d)
	require.ErrorIs(t, err, billing.ErrInvalidObject)
	require.ErrorIs(t, err, billing.ErrDecisionRule)
}
