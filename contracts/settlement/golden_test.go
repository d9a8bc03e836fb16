package settlement_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

func q(ref string, fill byte) strict.Quadruple {
	d := make([]byte, 64)
	for i := range d {
		d[i] = fill
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: string(d)}
}

func ptr(x strict.Quadruple) *strict.Quadruple { return &x }

func base(dimension, disposition string) *settlement.Snapshot {
	s := &settlement.Snapshot{
		Snapshot: strict.Quadruple{Ref: "sis-0195f4a8-0000-7000-8000-000000000001"},
		Tenant: settlement.Tenant{Kind: "organization", ID: "0195f4a8-0000-7000-8000-000000000030",
			WorkspaceID: "0195f4a8-0000-7000-8000-000000000031"},
		BillingAccountID: "0195f4a8-0000-7000-8000-000000000040", BillingReservationID: "0195f4a8-0000-7000-8000-000000000041",
		RunID: "0195f4a8-0000-7000-8000-000000000020", RunStepID: "0195f4a8-0000-7000-8000-000000000050",
		ExecutionAttemptID: "0195f4a8-0000-7000-8000-000000000060", ChargeDimensionKey: dimension,
		StateVersion: 1, EligibilityFact: q("eef-1", 'e'), DispatchDisposition: disposition,
		AttemptManifest:  q("aem-1", 'a'),
		Pricing:          settlement.Pricing{PriceBookVersion: settlement.PriceBookVersion, BillingPolicyVersion: settlement.BillingPolicyVersion, RunAdmissionManifest: q("ram-1", 'b')},
		EconomicIdentity: settlement.EconomicIdentity{Kind: "credits"},
		RecordedAt:       at,
	}
	s.SettlementDimensionID = envelope.SettlementDimensionID(s.BillingReservationID, s.RunID, s.RunStepID, s.ExecutionAttemptID, dimension)
	p, err := settlement.PriceOf(dimension)
	if err != nil {
		panic(err)
	}
	s.Pricing.UnitPrice, s.Unit = p.UnitPrice, p.Unit
	return s
}

func usage(state string, quantity string) *settlement.Snapshot {
	s := base("text.output_tokens", settlement.DispositionDispatched)
	s.Decision = settlement.Decision{Decision: settlement.DecisionEligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "dispatched", Ref: q("med-1", '7')}
	s.Basis = settlement.UsageBasis{Kind: settlement.BasisGatewayUsage, GatewayDeploymentID: "gw-eu-1",
		AttemptRouteBinding: q("arb-1", 'c'), GatewayRouteSnapshot: q("grs-1", 'd'), CurrentAvailability: q("gas-1", '1'),
		AvailabilityStateVersion: 1, AvailabilityState: state,
		AvailabilityValidationReceipt: q("gacvr-1", '4'), AvailabilityValidationOperationID: "0195f4a8-0000-7000-8000-0000000000c1"}
	s.Quantity, s.TargetNetAmount, s.ReconciliationState = "0", "0", settlement.ReconciliationAwaitingEvidence
	if state == "available" {
		s.Basis.ProviderEvidence = ptr(q("gpe-1", '2'))
		s.MeterEvent = ptr(q("mev-1", '3'))
		s.Quantity, s.ReconciliationState = quantity, settlement.ReconciliationNotRequired
		s.TargetNetAmount, _ = settlement.Multiply(quantity, s.Pricing.UnitPrice)
	}
	if state == "conflicting" {
		s.ReconciliationState = settlement.ReconciliationRequired
	}
	return s
}

func sealed(t *testing.T, s *settlement.Snapshot) *settlement.Snapshot {
	t.Helper()
	_, err := settlement.Seal(s)
	require.NoError(t, err)
	return s
}

type golden struct {
	name string
	obj  *settlement.Snapshot
}

func goldens(t *testing.T) []golden {
	v1 := sealed(t, usage("available", "1234"))
	corrected := usage("available", "1500")
	corrected.Snapshot.Ref = "sis-0195f4a8-0000-7000-8000-000000000002"
	corrected.StateVersion = 2
	corrected.Predecessor = &settlement.Ref{Snapshot: v1.Snapshot, StateVersion: 1}
	corrected.Basis.CurrentAvailability, corrected.Basis.AvailabilityStateVersion = q("gas-2", '4'), 2
	corrected.Basis.ProviderEvidence, corrected.MeterEvent = ptr(q("gpe-2", '5')), ptr(q("mev-2", '6'))
	nd := base(settlement.ChargeDimensionNotDispatched, settlement.DispositionNotDispatched)
	nd.Tenant.ProjectID = "0195f4a8-0000-7000-8000-000000000032"
	nd.Decision = settlement.Decision{Decision: settlement.DecisionIneligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "not_dispatched", Ref: q("med-2", '8')}
	nd.Basis = settlement.UsageBasis{Kind: settlement.BasisNotDispatched, NotDispatchedFact: q("and-1", '7')}
	nd.Quantity, nd.TargetNetAmount, nd.ReconciliationState = "0", "0", settlement.ReconciliationNotRequired
	return []golden{
		{"usage_available_v1", v1},
		{"usage_corrected_v2", sealed(t, corrected)},
		{"usage_pending", sealed(t, usage("pending", ""))},
		{"usage_conflicting", sealed(t, usage("conflicting", ""))},
		{"not_dispatched_terminal_none", sealed(t, nd)},
	}
}

// CT-4 / ME-1: every golden is regenerated and byte-compared, decodes
// strictly, and its embedded digest recomputes.
func TestGolden_CT4_SettlementInputSnapshot(t *testing.T) {
	t.Parallel()
	c := settlement.Contracts()[0]
	for _, g := range goldens(t) {
		dir := filepath.Join("testdata", "golden", settlement.Kind, g.name)
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
		require.Equal(t, g.obj.Snapshot.Digest, d.Value)
		back, err := settlement.Decode(canonical)
		require.NoError(t, err)
		require.Equal(t, g.obj, back, "typed decode round-trips")
	}
}

type negative struct {
	name, requirement, base string
	mutate                  func(m map[string]any)
	want                    error
	// rule names the specific snapshot rule a settlement.ErrSnapshotRule
	// negative must break (the generic prefix alone proves nothing).
	rule string
}

func negatives() []negative {
	return []negative{
		{"unknown_field", "CT-2", "usage_available_v1", func(m map[string]any) { m["latest"] = true }, strict.ErrUnknownField, ""},
		{"float_amount", "CT-2", "usage_available_v1", func(m map[string]any) { m["targetNetAmount"] = "3.70e0" }, strict.ErrInvalidValue, ""},
		{"digest_does_not_recompute", "CT-3", "usage_available_v1", func(m map[string]any) {
			m["quantity"] = map[string]any{"kind": "measured", "quantity": "1235"}
			m["targetNetAmount"] = "3.705"
		}, digest.ErrMismatch, ""},
		{"amount_not_quantity_times_price", "ME-1", "usage_available_v1", func(m map[string]any) { m["targetNetAmount"] = "4" }, settlement.ErrSnapshotRule, "is not quantity × unitPrice"},
		{"dimension_id_not_derived", "ME-1", "usage_available_v1", func(m map[string]any) {
			m["settlementDimensionId"] = "0195f4a8-0000-7000-8000-0000000000ff"
		}, settlement.ErrSnapshotRule, "settlementDimensionId does not recompute"},
		{"v1_with_predecessor", "ME-1", "usage_corrected_v2", func(m map[string]any) { m["settlementInputStateVersion"] = int64(1) }, settlement.ErrSnapshotRule, "state version 1 has no predecessor"},
		{"version_gap", "ME-1", "usage_corrected_v2", func(m map[string]any) { m["settlementInputStateVersion"] = int64(3) }, settlement.ErrSnapshotRule, "needs its direct predecessor 2"},
		{"not_dispatched_with_amount", "ME-1", "not_dispatched_terminal_none", func(m map[string]any) {
			m["targetNetAmount"] = "1"
		}, settlement.ErrSnapshotRule, "not_dispatched is terminal-none"},
		{"measured_without_meter_event", "ME-1", "not_dispatched_terminal_none", func(m map[string]any) {
			m["quantity"] = map[string]any{"kind": "measured", "quantity": "0"}
		}, settlement.ErrSnapshotRule, "the quantity is measured exactly when the MeterEvent head is present"},
		{"none_with_meter_event", "ME-1", "usage_available_v1", func(m map[string]any) {
			m["quantity"] = map[string]any{"kind": "none"}
		}, settlement.ErrSnapshotRule, "the quantity is measured exactly when the MeterEvent head is present"},
		{"none_with_quantity", "CT-2", "usage_pending", func(m map[string]any) {
			m["quantity"] = map[string]any{"kind": "none", "quantity": "0"}
		}, strict.ErrMixedUnion, ""},
		{"bare_quantity_string", "CT-2", "usage_available_v1", func(m map[string]any) { m["quantity"] = "1234" }, strict.ErrNotObject, ""},
		{"unknown_quantity_kind", "CT-2", "usage_available_v1", func(m map[string]any) {
			m["quantity"] = map[string]any{"kind": "estimated", "quantity": "1234"}
		}, strict.ErrUnknownEnum, ""},
		{"not_dispatched_eligible", "ME-1", "not_dispatched_terminal_none", func(m map[string]any) {
			m["eligibilityDecision"].(map[string]any)["decision"] = "eligible"
		}, settlement.ErrSnapshotRule, "not_dispatched is ineligible"},
		{"pending_with_meter_event", "ME-1", "usage_pending", func(m map[string]any) {
			m["meterEventHead"] = map[string]any{"state": "present", "meterEventRef": "mev-9", "meterEventSchemaVersion": "1",
				"meterEventDigestAlgorithmVersion": "jcs-sha256-v1", "meterEventDigest": "9999999999999999999999999999999999999999999999999999999999999999"}
			m["quantity"] = map[string]any{"kind": "measured", "quantity": "0"}
		}, settlement.ErrSnapshotRule, "a MeterEvent and provider evidence exist exactly when the usage is available"},
		{"other_price_book", "ME-1", "usage_available_v1", func(m map[string]any) {
			m["pricing"].(map[string]any)["priceBookVersion"] = "oceanway-price-book@0"
		}, strict.ErrUnexpectedLiteral, ""},
		{"bare_meter_event_ref", "CT-3", "usage_available_v1", func(m map[string]any) {
			delete(m["meterEventHead"].(map[string]any), "meterEventDigest")
		}, strict.ErrMissingField, ""},
	}
}

type manifestEntry struct {
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Expected    string `json:"expected"`
}

// CT-2/CT-3/ME-1: every negative artefact is rejected with its named reason.
func TestNegatives_CT2_SettlementInputSnapshot(t *testing.T) {
	t.Parallel()
	gs := goldens(t)
	var entries []manifestEntry
	for _, n := range negatives() {
		var b *settlement.Snapshot
		for _, g := range gs {
			if g.name == n.base {
				b = g.obj
			}
		}
		require.NotNil(t, b, n.base)
		m := b.ToJSON()
		n.mutate(m)
		file := filepath.Join(settlement.Kind, n.name+".json")
		goldentest.Check(t, filepath.Join("testdata", "negative", file), goldentest.Indent(t, m))
		raw, err := os.ReadFile(filepath.Join("testdata", "negative", file))
		require.NoError(t, err)
		verr := settlement.Contracts()[0].Validate(raw)
		require.ErrorIs(t, verr, n.want, file)
		if errors.Is(n.want, settlement.ErrSnapshotRule) {
			require.NotEmpty(t, n.rule, "%s: a snapshot rule negative names its rule", file)
			require.ErrorContains(t, verr, n.rule, file)
		}
		expected := n.want.Error()
		if n.rule != "" {
			expected += ": " + n.rule
		}
		entries = append(entries, manifestEntry{File: file, Requirement: n.requirement, Expected: expected})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	b, err := json.MarshalIndent(entries, "", "  ")
	require.NoError(t, err)
	goldentest.Check(t, filepath.Join("testdata", "negative", "manifest.json"), append(b, '\n'))
}

// Money is exact: the product of two decimals never goes through a float.
func TestMultiplyExact(t *testing.T) {
	t.Parallel()
	for _, c := range [][3]string{{"1234", "0.003", "3.702"}, {"0", "2", "0"}, {"3", "0.1", "0.3"},
		{"999999999999", "0.001", "999999999.999"}, {"120", "0.5", "60"}} {
		got, err := settlement.Multiply(c[0], c[1])
		require.NoError(t, err)
		require.Equal(t, c[2], got, "%s × %s", c[0], c[1])
	}
	_, err := settlement.Multiply("1e3", "1")
	require.ErrorIs(t, err, settlement.ErrAmount)
	_, err = settlement.PriceOf("text.unknown")
	require.ErrorIs(t, err, settlement.ErrUnregisteredDimension)
}

// Seal refuses a snapshot that breaks a rule.
func TestSealRefusesInvalid(t *testing.T) {
	t.Parallel()
	s := usage("available", "10")
	s.TargetNetAmount = "1"
	_, err := settlement.Seal(s)
	require.ErrorIs(t, err, settlement.ErrInvalidObject)
	require.ErrorIs(t, err, settlement.ErrSnapshotRule)
}

// ME-1 / metering finding 5: the Current Receipt of the usage availability
// is part of the sealed snapshot (its digest) but not of its settlement
// content: a re-validation of unchanged usage appends no new version, while
// another availability does.
func TestME1ContentDigestExcludesOnlyTheValidationReceipt(t *testing.T) {
	a := usage("available", "1200")
	base, err := settlement.ContentDigest(a)
	require.NoError(t, err)
	b := usage("available", "1200")
	b.Basis.AvailabilityValidationReceipt = q("gacvr-2", '5')
	b.Basis.AvailabilityValidationOperationID = "0195f4a8-0000-7000-8000-0000000000c2"
	same, err := settlement.ContentDigest(b)
	require.NoError(t, err)
	require.Equal(t, base, same)
	_, err = settlement.Seal(a)
	require.NoError(t, err)
	_, err = settlement.Seal(b)
	require.NoError(t, err)
	require.NotEqual(t, a.Snapshot.Digest, b.Snapshot.Digest, "the receipt is sealed into the snapshot")
	c := usage("available", "1200")
	c.Basis.CurrentAvailability = q("gas-2", '6')
	other, err := settlement.ContentDigest(c)
	require.NoError(t, err)
	require.NotEqual(t, base, other)
}
