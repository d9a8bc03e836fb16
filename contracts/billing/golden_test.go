package billing_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

const (
	account     = "0195f4a8-0000-7000-8000-000000000040"
	reservation = "0195f4a8-0000-7000-8000-000000000041"
	run         = "0195f4a8-0000-7000-8000-000000000020"
	fence       = "0195f4a8-0000-7000-8000-000000000042"
	step        = "0195f4a8-0000-7000-8000-000000000050"
	attempt1    = "0195f4a8-0000-7000-8000-000000000060"
	attempt2    = "0195f4a8-0000-7000-8000-000000000061"
)

func fq(ref string, fill byte) strict.Quadruple {
	d := make([]byte, 64)
	for i := range d {
		d[i] = fill
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: string(d)}
}

func sealed[T billing.Sealed](t *testing.T, x T) T {
	t.Helper()
	_, err := billing.Seal(x)
	require.NoError(t, err)
	return x
}

func dimension(attemptID, key, disposition, state, target string, av *billing.Availability, fill byte) billing.ManifestDimension {
	return billing.ManifestDimension{
		RunStepID: step, ExecutionAttemptID: attemptID, ChargeDimensionKey: key,
		SettlementDimensionID: envelope.SettlementDimensionID(reservation, run, step, attemptID, key),
		DispatchDisposition:   disposition, SettlementInput: fq("sis-"+attemptID[len(attemptID)-2:]+"-"+key, fill), SettlementStateVer: 1,
		EconomicIdentity: billing.Credits, InputState: state, TargetAmount: target, Availability: av,
	}
}

func availability(key string, fill byte) *billing.Availability {
	return &billing.Availability{GatewayDeploymentID: "gw-eu-1", ProviderEvidenceKind: "provider_usage", EvidenceDimensionKey: key,
		StateVersion: 2, Snapshot: fq("gas-"+key, fill)}
}

func manifestFixture(ref string, dims []billing.ManifestDimension, total string) *billing.FinalizationInputManifest {
	return &billing.FinalizationInputManifest{
		Manifest: strict.Quadruple{Ref: ref},
		Tenant: billing.Tenant{Kind: "organization", TenantID: "0195f4a8-0000-7000-8000-000000000030",
			WorkspaceID: "0195f4a8-0000-7000-8000-000000000031"},
		BillingAccountID: account, BillingReservationID: reservation, RunID: run, FenceID: fence,
		FinalizationOperationID: billing.FinalizationOperationID(fence), RunAdmissionManifest: fq("ram-1", '1'),
		ReservedAmount: "1500", ClosureOperationID: "0195f4a8-0000-7000-8000-000000000070",
		Finalization: fq("ref-1", '2'), FinalizationStateVer: 2, AttemptSet: fq("ras-1", '3'), AttemptCount: 2,
		Dimensions: dims, TargetTotal: total, CreatedAt: at,
	}
}

type fixtures struct {
	mixed, empty             *billing.FinalizationInputManifest
	mixedBundle, emptyBundle *billing.FinalizationValidationBundle
	decisions                map[string]*billing.BillingFinalizationDecision
}

func build(t *testing.T) fixtures {
	mixed := sealed(t, manifestFixture("fim-1", []billing.ManifestDimension{
		dimension(attempt1, "text.input_tokens", billing.DispositionDispatched, billing.InputMetered, "120", availability("text.input_tokens", 'a'), '4'),
		dimension(attempt1, "text.output_tokens", billing.DispositionDispatched, billing.InputMetered, "80.5", availability("text.output_tokens", 'b'), '5'),
		dimension(attempt2, "text.input_tokens", billing.DispositionNotDispatched, billing.InputTerminalNone, "0", nil, '6'),
	}, "200.5"))
	empty := manifestFixture("fim-0", []billing.ManifestDimension{}, "0")
	empty.AttemptCount = 0
	empty = sealed(t, empty)
	bundle := func(ref string, m *billing.FinalizationInputManifest) *billing.FinalizationValidationBundle {
		b := &billing.FinalizationValidationBundle{
			Bundle: strict.Quadruple{Ref: ref}, BillingReservationID: reservation, RunID: run,
			FinalizationOperationID: m.FinalizationOperationID, InputManifest: m.Manifest,
			Execution: billing.ExecutionEntry{Finalization: m.Finalization, AttemptSet: m.AttemptSet, AttemptCount: m.AttemptCount, Receipt: fq("rxr-1", '7')},
			Metering:  []billing.MeteringEntry{}, Gateway: []billing.GatewayEntry{}, AssembledAt: at.Add(time.Second),
		}
		for _, d := range m.Dimensions {
			b.Metering = append(b.Metering, billing.MeteringEntry{RunStepID: d.RunStepID, ExecutionAttemptID: d.ExecutionAttemptID,
				ChargeDimensionKey: d.ChargeDimensionKey, SettlementInput: d.SettlementInput, SettlementStateVer: d.SettlementStateVer,
				Receipt: fq("scr-"+d.SettlementDimensionID, '8')})
			if d.Availability != nil {
				b.Gateway = append(b.Gateway, billing.GatewayEntry{ExecutionAttemptID: d.ExecutionAttemptID, Availability: *d.Availability})
			}
		}
		billing.SortGatewayEntries(b.Gateway)
		return sealed(t, b)
	}
	mb, eb := bundle("fvb-1", mixed), bundle("fvb-0", empty)
	decision := func(ref string, m *billing.FinalizationInputManifest, outcome string, b *billing.FinalizationValidationBundle, settled, released, reason string) *billing.BillingFinalizationDecision {
		d := &billing.BillingFinalizationDecision{
			Decision: strict.Quadruple{Ref: ref}, BillingAccountID: account, BillingReservationID: reservation, RunID: run, FenceID: fence,
			FinalizationOperationID: m.FinalizationOperationID, InputManifest: m.Manifest, ReservedAmount: m.ReservedAmount,
			TargetTotal: m.TargetTotal, Outcome: outcome, SettledAmount: settled, ReleasedAmount: released, ReasonCode: reason,
			DecidedAt: at.Add(2 * time.Second),
		}
		if b != nil {
			d.Bundle = b.Bundle
		}
		return sealed(t, d)
	}
	return fixtures{mixed: mixed, empty: empty, mixedBundle: mb, emptyBundle: eb, decisions: map[string]*billing.BillingFinalizationDecision{
		"settle_and_release_remainder": decision("bfd-1", mixed, billing.DecisionSettleAndReleaseRemainder, mb, "200.5", "1299.5", ""),
		"release_all":                  decision("bfd-0", empty, billing.DecisionReleaseAll, eb, "0", "1500", ""),
		"blocked":                      decision("bfd-2", mixed, billing.DecisionBlocked, nil, "", "", billing.ReasonInputsNotClosed),
		"reconciliation_required":      decision("bfd-3", mixed, billing.DecisionReconciliationRequired, nil, "", "", billing.ReasonTargetAboveReservation),
		"execution_conflicting":        executionConflict(t, decision("bfd-4", mixed, billing.DecisionReconciliationRequired, nil, "", "", billing.ReasonExecutionConflicting)),
	}}
}

type golden struct {
	kind, name string
	obj        billing.Sealed
}

func goldens(t *testing.T) []golden {
	f := build(t)
	out := []golden{
		{billing.KindFinalizationInputManifest, "mixed_dispatch", f.mixed},
		{billing.KindFinalizationInputManifest, "empty_run", f.empty},
		{billing.KindFinalizationValidationBundle, "mixed_dispatch", f.mixedBundle},
		{billing.KindFinalizationValidationBundle, "empty_run", f.emptyBundle},
	}
	names := make([]string, 0, len(f.decisions))
	for n := range f.decisions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, golden{billing.KindBillingFinalizationDecision, n, f.decisions[n]})
	}
	return out
}

func contract(t *testing.T, kind string) billing.Contract {
	t.Helper()
	for _, c := range billing.Contracts() {
		if c.Name == kind {
			return c
		}
	}
	t.Fatalf("unknown kind %s", kind)
	return billing.Contract{}
}

// CT-4 / BI-1: every golden is regenerated from the fixtures and
// byte-compared; the raw file decodes strictly, passes the refinement rules
// and its embedded digest recomputes.
func TestBI1Goldens(t *testing.T) {
	t.Parallel()
	perKind := map[string]int{}
	for _, g := range goldens(t) {
		perKind[g.kind]++
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
		require.Equal(t, g.obj.Quad().Digest, d.Value)
	}
	for _, c := range billing.Contracts() {
		require.GreaterOrEqual(t, perKind[c.Name], 2, c.Name)
	}
}

// The typed decoders return exactly the object that was sealed.
func TestBI1DecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range goldens(t) {
		body, err := jcs.Marshal(g.obj.ToJSON())
		require.NoError(t, err)
		var back billing.Sealed
		switch g.kind {
		case billing.KindFinalizationInputManifest:
			back, err = billing.DecodeFinalizationInputManifest(body)
		case billing.KindFinalizationValidationBundle:
			back, err = billing.DecodeFinalizationValidationBundle(body)
		case billing.KindBillingFinalizationDecision:
			back, err = billing.DecodeBillingFinalizationDecision(body)
		}
		require.NoError(t, err)
		require.Equal(t, g.obj, back, g.kind+"/"+g.name)
	}
}

// Exact decimals: sums and differences never round and never go negative.
func TestBI1AmountsAreExactDecimals(t *testing.T) {
	t.Parallel()
	s, err := billing.SumAmounts("0.1", "0.2", "1299.000000000000000001")
	require.NoError(t, err)
	require.Equal(t, "1299.300000000000000001", s)
	r, err := billing.SubtractAmounts("1500", "200.5")
	require.NoError(t, err)
	require.Equal(t, "1299.5", r)
	_, err = billing.SubtractAmounts("1", "1.5")
	require.ErrorIs(t, err, billing.ErrAmount)
	for _, bad := range []string{"1e3", "-1", "01", "1.50", "1.", ".5", "NaN"} {
		_, err := billing.SumAmounts(bad)
		require.ErrorIs(t, err, billing.ErrAmount, bad)
	}
	c, err := billing.CompareAmounts("10", "9.999999999999999999")
	require.NoError(t, err)
	require.Equal(t, 1, c)
}

// The finalization operation is derived from the fence alone, so every
// evaluation of the fence shares it.
func TestBI1FinalizationOperationIsDerivedFromTheFence(t *testing.T) {
	t.Parallel()
	a := billing.FinalizationOperationID(fence)
	require.Equal(t, a, billing.FinalizationOperationID(fence))
	require.NotEqual(t, a, billing.FinalizationOperationID(reservation))
	require.True(t, strict.IsUUID(a))
}

type manifestEntry struct {
	Kind        string `json:"kind"`
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Expected    string `json:"expected"`
}

// executionConflict binds the Execution owner's stored
// RunExecutionFinalizationConflictFact@1 (issue 32) and reseals.
func executionConflict(t *testing.T, d *billing.BillingFinalizationDecision) *billing.BillingFinalizationDecision {
	t.Helper()
	d.ExecutionConflict = strict.Quadruple{Ref: "rfc-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
		Digest: "6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c"}
	d.Decision = strict.Quadruple{Ref: d.Decision.Ref}
	return sealed(t, d)
}
