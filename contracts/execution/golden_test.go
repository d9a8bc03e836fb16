package execution_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

var update = flag.Bool("update", false, "rewrite testdata/golden and testdata/negative from the fixtures")

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

func manifestFixture(project string) *execution.RunAdmissionManifest {
	return &execution.RunAdmissionManifest{
		Manifest:             strict.Quadruple{Ref: "ram-0195f4a8-0000-7000-8000-000000000001"},
		AdmissionOperationID: "0195f4a8-0000-7000-8000-000000000010",
		RequestDigest:        digest.Digest{Algorithm: digest.JCSSHA256V1, Value: "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		RunID:                "0195f4a8-0000-7000-8000-000000000020",
		Tenant: execution.Tenant{Kind: execution.TenantOrganization, TenantID: "0195f4a8-0000-7000-8000-000000000030",
			WorkspaceID: "0195f4a8-0000-7000-8000-000000000031", ProjectID: project},
		BillingAccountID:     "0195f4a8-0000-7000-8000-000000000040",
		BillingReservationID: "0195f4a8-0000-7000-8000-000000000041",
		ReservedCredits:      1500,
		AdmittedAt:           at,
	}
}

func sealed[T execution.Sealed](t *testing.T, x T) T {
	t.Helper()
	_, err := execution.Seal(x)
	require.NoError(t, err)
	return x
}

type golden struct {
	kind, name string
	obj        execution.Sealed
}

func goldens(t *testing.T) []golden {
	m1 := sealed(t, manifestFixture("0195f4a8-0000-7000-8000-000000000032"))
	m2 := sealed(t, manifestFixture(""))
	tok := func(m *execution.RunAdmissionManifest, ref string) *execution.RunExecutionToken {
		return sealed(t, execution.TokenFor(m, ref, at.Add(time.Second)))
	}
	attempt := func(step, attemptID, gw string, rev int64) *execution.AttemptExecutionManifest {
		return sealed(t, &execution.AttemptExecutionManifest{
			Manifest: strict.Quadruple{Ref: "aem-" + attemptID}, RunID: m1.RunID, RunStepID: step, ExecutionAttemptID: attemptID,
			RunAdmissionManifest: m1.Manifest, ModelDeploymentID: "model-deploy/text-large", GatewayDeploymentID: gw,
			RoutingPolicyRevision: rev,
			OutputContract: strict.Quadruple{Ref: "output-contract/text@1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
				Digest: "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"},
			ChargeDimensionRegistryVersion: "oceanway-charge-dimension-registry@1",
			ChargeDimensionKeys:            []string{"text.input_tokens", "text.output_tokens"},
			CreatedAt:                      at.Add(2 * time.Second),
		})
	}
	a1 := attempt("0195f4a8-0000-7000-8000-000000000050", "0195f4a8-0000-7000-8000-000000000060", "gw-eu-1", 3)
	a2 := attempt("0195f4a8-0000-7000-8000-000000000050", "0195f4a8-0000-7000-8000-000000000061", "gw-us-2", 4)
	notDispatched := sealed(t, &execution.AttemptNotDispatchedFact{
		Fact: strict.Quadruple{Ref: "and-1"}, RunID: a2.RunID, RunStepID: a2.RunStepID, ExecutionAttemptID: a2.ExecutionAttemptID,
		AttemptManifest: a2.Manifest, GatewayDeploymentID: a2.GatewayDeploymentID,
		Rejection: strict.Quadruple{Ref: "gpr-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "1111111111111111111111111111111111111111111111111111111111111111"},
		RejectionReasonCode: "no_capacity", RecordedAt: at.Add(3 * time.Second),
	})
	notDispatched2 := sealed(t, &execution.AttemptNotDispatchedFact{
		Fact: strict.Quadruple{Ref: "and-2"}, RunID: a1.RunID, RunStepID: a1.RunStepID, ExecutionAttemptID: a1.ExecutionAttemptID,
		AttemptManifest: a1.Manifest, GatewayDeploymentID: a1.GatewayDeploymentID,
		Rejection: strict.Quadruple{Ref: "gpr-2", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "2222222222222222222222222222222222222222222222222222222222222222"},
		RejectionReasonCode: "model_not_routable", RecordedAt: at.Add(3 * time.Second),
	})
	eligibility := func(a *execution.AttemptExecutionManifest, nd *execution.AttemptNotDispatchedFact) *execution.ExecutionEligibilityFact {
		f := &execution.ExecutionEligibilityFact{
			Fact: strict.Quadruple{Ref: "eef-" + a.ExecutionAttemptID}, BillingAccountID: m1.BillingAccountID, BillingReservationID: m1.BillingReservationID,
			RunID: a.RunID, RunStepID: a.RunStepID, ExecutionAttemptID: a.ExecutionAttemptID, RunAdmissionManifest: m1.Manifest,
			AttemptManifest: a.Manifest, Disposition: execution.DispositionDispatched, FinalizedAt: at.Add(4 * time.Second),
		}
		if nd != nil {
			f.Disposition, f.NotDispatched = execution.DispositionNotDispatched, nd.Fact
		}
		return sealed(t, f)
	}
	e1, e2 := eligibility(a1, nil), eligibility(a2, notDispatched)
	closure := execution.RunClosure{Tenant: m1.Tenant, BillingAccountID: m1.BillingAccountID, BillingReservationID: m1.BillingReservationID,
		RunID: m1.RunID, RunAdmissionManifest: m1.Manifest}
	items := []execution.AttemptSetItem{
		{RunStepID: a1.RunStepID, ExecutionAttemptID: a1.ExecutionAttemptID, AttemptManifest: a1.Manifest, EligibilityFact: e1.Fact, DispatchDisposition: e1.Disposition},
		{RunStepID: a2.RunStepID, ExecutionAttemptID: a2.ExecutionAttemptID, AttemptManifest: a2.Manifest, EligibilityFact: e2.Fact, DispatchDisposition: e2.Disposition},
	}
	set := sealed(t, &execution.RunAttemptSetManifest{Manifest: strict.Quadruple{Ref: "ras-1"}, RunClosure: closure, Attempts: items, ClosedAt: at.Add(5 * time.Second)})
	emptySet := sealed(t, &execution.RunAttemptSetManifest{Manifest: strict.Quadruple{Ref: "ras-0"}, RunClosure: closure, Attempts: []execution.AttemptSetItem{}, ClosedAt: at.Add(5 * time.Second)})
	token := tok(m1, "ret-1")
	fin := func(ref string, s *execution.RunAttemptSetManifest) *execution.RunExecutionFinalizationFact {
		return sealed(t, &execution.RunExecutionFinalizationFact{Fact: strict.Quadruple{Ref: ref}, RunClosure: closure, Token: token.Token,
			ClosureOperationID: "0195f4a8-0000-7000-8000-000000000070", StateVersion: 2, AttemptSet: s.Manifest, Attempts: s.Attempts, ClosedAt: s.ClosedAt})
	}
	f1, f0 := fin("ref-1", set), fin("ref-0", emptySet)
	closureReceipt := func(ref string, f *execution.RunExecutionFinalizationFact) *execution.RunExecutionFinalizationReceipt {
		return sealed(t, &execution.RunExecutionFinalizationReceipt{Receipt: strict.Quadruple{Ref: ref}, RunClosure: closure,
			FinalizationOperationID: "0195f4a8-0000-7000-8000-000000000080",
			InputManifest: strict.Quadruple{Ref: "fim-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
				Digest: "4444444444444444444444444444444444444444444444444444444444444444"},
			ClosureOperationID: f.ClosureOperationID, Finalization: f.Fact, StateVersion: f.StateVersion, AttemptSet: f.AttemptSet,
			AttemptCount: int64(len(f.Attempts)), ValidatedAt: at.Add(7 * time.Second)})
	}
	eligibilityConflict := func(ref, stored, reason string) *execution.ExecutionEligibilityConflictFact {
		return sealed(t, &execution.ExecutionEligibilityConflictFact{Fact: strict.Quadruple{Ref: ref}, RunID: m1.RunID,
			RunStepID: "0195f4a8-0000-7000-8000-000000000041", ExecutionAttemptID: "0195f4a8-0000-7000-8000-000000000042",
			RequestedFact: f1.Fact, RequestedManifest: f1.AttemptSet, StoredRef: stored, ReasonCode: reason, DetectedAt: at.Add(6 * time.Second)})
	}
	conflict := func(ref, stored, reason string) *execution.RunExecutionFinalizationConflictFact {
		return sealed(t, &execution.RunExecutionFinalizationConflictFact{Fact: strict.Quadruple{Ref: ref}, RunID: m1.RunID, Requested: f1.Fact,
			StoredRef: stored, ReasonCode: reason, DetectedAt: at.Add(6 * time.Second)})
	}
	key := func(a *execution.AttemptExecutionManifest) execution.SlotKey {
		return execution.SlotKey{ExecutionAttemptID: a.ExecutionAttemptID, GatewayDeploymentID: a.GatewayDeploymentID, AttemptManifest: a.Manifest}
	}
	route := execution.Route{ChannelID: "channel/eu-primary", SupplyID: "supply/sim-1", CredentialVersion: 7, ProviderModel: "sim/text-large", AdapterID: "adapter/simulated"}
	rs := sealed(t, &execution.GatewayRouteSnapshot{Snapshot: strict.Quadruple{Ref: "grs-1"}, SlotKey: key(a1), RoutingPolicyRevision: 3, Route: route, CapturedAt: at.Add(3 * time.Second)})
	rs2 := sealed(t, &execution.GatewayRouteSnapshot{Snapshot: strict.Quadruple{Ref: "grs-2"}, SlotKey: key(a2), RoutingPolicyRevision: 4,
		Route: execution.Route{ChannelID: "channel/us-backup", SupplyID: "supply/sim-2", CredentialVersion: 1, ProviderModel: "sim/video", AdapterID: "adapter/simulated"}, CapturedAt: at.Add(3 * time.Second)})
	bind := sealed(t, &execution.AttemptRouteBinding{Binding: strict.Quadruple{Ref: "arb-1"}, SlotKey: key(a1), RouteSnapshot: rs.Snapshot, Route: rs.Route, BoundAt: at.Add(3 * time.Second)})
	bind2 := sealed(t, &execution.AttemptRouteBinding{Binding: strict.Quadruple{Ref: "arb-2"}, SlotKey: key(a2), RouteSnapshot: rs2.Snapshot, Route: rs2.Route, BoundAt: at.Add(3 * time.Second)})
	rej := func(ref, reason string) *execution.GatewayPreBindingRejectionFact {
		return sealed(t, &execution.GatewayPreBindingRejectionFact{Fact: strict.Quadruple{Ref: ref}, SlotKey: key(a2), ReasonCode: reason, RejectedAt: at.Add(3 * time.Second)})
	}
	evidence := func(ref, kind, dim, qty string) *execution.ProviderEvidence {
		return sealed(t, &execution.ProviderEvidence{Evidence: strict.Quadruple{Ref: ref}, ExecutionAttemptID: a1.ExecutionAttemptID,
			GatewayDeploymentID: a1.GatewayDeploymentID, Binding: bind.Binding, EvidenceKind: kind, DimensionKey: dim, Quantity: qty,
			ProviderReportID: "sim-report-" + ref, ObservedAt: at.Add(4 * time.Second)})
	}
	usage := evidence("gpe-1", execution.EvidenceProviderUsage, "text.input_tokens", "1200")
	cost := evidence("gpe-2", execution.EvidenceProviderCost, "cost.usd", "0.0042")
	snap := func(ref string, version int64, state string, pred *execution.AvailabilitySnapshot, ev *execution.ProviderEvidence) *execution.AvailabilitySnapshot {
		x := &execution.AvailabilitySnapshot{Snapshot: strict.Quadruple{Ref: ref}, SlotKey: key(a1), Binding: bind.Binding, RouteSnapshot: rs.Snapshot,
			EvidenceKind: execution.EvidenceProviderUsage, DimensionKey: "text.input_tokens", State: state, ReasonCode: "provider_" + state,
			StateVersion: version, RecordedAt: at.Add(5 * time.Second)}
		if pred != nil {
			x.Predecessor, x.PredecessorStateVersion = pred.Snapshot, pred.StateVersion
		}
		if ev != nil {
			x.Evidence = ev.Evidence
		}
		return sealed(t, x)
	}
	evidenceConflict := func(ref, qty string, ev *execution.ProviderEvidence) *execution.GatewayEvidenceConflictFact {
		return sealed(t, &execution.GatewayEvidenceConflictFact{Fact: strict.Quadruple{Ref: ref}, ExecutionAttemptID: ev.ExecutionAttemptID,
			GatewayDeploymentID: ev.GatewayDeploymentID, Binding: ev.Binding, EvidenceKind: ev.EvidenceKind, DimensionKey: ev.DimensionKey,
			Evidence: ev.Evidence, ProviderReportID: ev.ProviderReportID, ConflictingQuantity: qty,
			ReasonCode: execution.EvidenceConflictReportDisagrees, DetectedAt: at.Add(6 * time.Second)})
	}
	s1 := snap("gas-1", 1, execution.AvailabilityPending, nil, nil)
	s2 := snap("gas-2", 2, execution.AvailabilityAvailable, s1, usage)
	validation := func(ref string, current bool) *execution.AvailabilityCurrentValidationReceipt {
		r := &execution.AvailabilityCurrentValidationReceipt{Receipt: strict.Quadruple{Ref: ref}, Purpose: execution.PurposeMeteringEligibilityBasis,
			OperationID: "0195f4a8-0000-7000-8000-0000000000a1",
			BasisDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: "5555555555555555555555555555555555555555555555555555555555555555"},
			SlotKey:     key(a1), EvidenceKind: s1.EvidenceKind, DimensionKey: s1.DimensionKey, Validated: s1.Snapshot, ValidatedStateVersion: 1,
			Current: current, ValidatedAt: at.Add(time.Minute)}
		if !current {
			r.CurrentSnapshot, r.CurrentStateVersion = s2.Snapshot, 2
		}
		return sealed(t, r)
	}
	return []golden{
		{execution.KindAvailabilityCurrentValidationReceipt, "current", validation("gcv-1", true)},
		{execution.KindAvailabilityCurrentValidationReceipt, "not_current", validation("gcv-2", false)},
		{execution.KindGatewayRouteSnapshot, "text", rs},
		{execution.KindGatewayRouteSnapshot, "video", rs2},
		{execution.KindAttemptRouteBinding, "text", bind},
		{execution.KindAttemptRouteBinding, "video", bind2},
		{execution.KindGatewayPreBindingRejectionFact, "no_capacity", rej("gpr-1", "no_capacity")},
		{execution.KindGatewayPreBindingRejectionFact, "policy_denied", rej("gpr-2", "policy_denied")},
		{execution.KindProviderEvidence, "usage_tokens", usage},
		{execution.KindProviderEvidence, "cost", cost},
		{execution.KindGatewayEvidenceConflictFact, "usage_report_disagrees", evidenceConflict("gec-1", "1300", usage)},
		{execution.KindGatewayEvidenceConflictFact, "cost_report_disagrees", evidenceConflict("gec-2", "0.0051", cost)},
		{execution.KindAvailabilitySnapshot, "pending_v1", s1},
		{execution.KindAvailabilitySnapshot, "available_v2", s2},
		{execution.KindExecutionEligibilityFact, "dispatched", e1},
		{execution.KindExecutionEligibilityFact, "not_dispatched", e2},
		{execution.KindAttemptNotDispatchedFact, "no_capacity", notDispatched},
		{execution.KindAttemptNotDispatchedFact, "model_not_routable", notDispatched2},
		{execution.KindRunAttemptSetManifest, "two_attempts", set},
		{execution.KindRunAttemptSetManifest, "empty", emptySet},
		{execution.KindRunExecutionFinalizationFact, "two_attempts", f1},
		{execution.KindRunExecutionFinalizationFact, "empty", f0},
		{execution.KindRunExecutionFinalizationReceipt, "two_attempts", closureReceipt("rxr-1", f1)},
		{execution.KindRunExecutionFinalizationReceipt, "empty", closureReceipt("rxr-0", f0)},
		{execution.KindRunExecutionFinalizationConflictFact, "digest_differs", conflict("rfc-1", "ref-1", "finalization_digest_differs")},
		{execution.KindRunExecutionFinalizationConflictFact, "stored_does_not_recompute", conflict("rfc-2", "", "stored_finalization_invalid")},
		{execution.KindExecutionEligibilityConflictFact, "fact_differs", eligibilityConflict("eec-1", "eef-9", execution.EligibilityConflictFactDiffers)},
		{execution.KindExecutionEligibilityConflictFact, "stored_invalid", eligibilityConflict("eec-2", "", execution.EligibilityConflictStoredInvalid)},
		{execution.KindRunAdmissionManifest, "with_project", m1},
		{execution.KindRunAdmissionManifest, "without_project", m2},
		{execution.KindRunExecutionToken, "with_project", tok(m1, "ret-1")},
		{execution.KindRunExecutionToken, "without_project", tok(m2, "ret-2")},
		{execution.KindAttemptExecutionManifest, "first_attempt", a1},
		{execution.KindAttemptExecutionManifest, "rerouted_attempt", a2},
	}
}

func contract(t *testing.T, kind string) execution.Contract {
	t.Helper()
	for _, c := range execution.Contracts() {
		if c.Name == kind {
			return c
		}
	}
	t.Fatalf("unknown kind %s", kind)
	return execution.Contract{}
}

func indent(t *testing.T, m map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(m))
	return buf.Bytes()
}

func checkFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden; run go test ./contracts/execution -update")
	require.Equal(t, string(want), string(got), "%s is stale; run with -update and review the diff", path)
}

// CT-4: every golden is regenerated from the fixtures and byte-compared; the
// raw file decodes strictly and its embedded digest recomputes; canonical
// bytes and the candidate digest match the files.
func TestGolden_CT4(t *testing.T) {
	t.Parallel()
	perKind := map[string]int{}
	for _, g := range goldens(t) {
		perKind[g.kind]++
		c := contract(t, g.kind)
		dir := filepath.Join("testdata", "golden", g.kind, g.name)
		checkFile(t, filepath.Join(dir, "raw.json"), indent(t, g.obj.ToJSON()))
		raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
		require.NoError(t, err)
		require.NoError(t, c.Validate(raw), g.name)
		canonical, err := jcs.Canonicalize(raw)
		require.NoError(t, err)
		checkFile(t, filepath.Join(dir, "canonical.json"), canonical)
		d, err := c.Digest(raw)
		require.NoError(t, err)
		checkFile(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
		require.Equal(t, g.obj.Quad().Digest, d.Value, "embedded digest is the candidate digest")
	}
	for _, c := range execution.Contracts() {
		require.GreaterOrEqual(t, perKind[c.Name], 2, c.Name)
	}
}

// The typed decoders return exactly the object that was sealed.
func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range goldens(t) {
		body, err := jcs.Marshal(g.obj.ToJSON())
		require.NoError(t, err)
		var back execution.Sealed
		switch g.kind {
		case execution.KindRunAdmissionManifest:
			back, err = execution.DecodeRunAdmissionManifest(body)
		case execution.KindRunExecutionToken:
			back, err = execution.DecodeRunExecutionToken(body)
		case execution.KindAttemptExecutionManifest:
			back, err = execution.DecodeAttemptExecutionManifest(body)
		case execution.KindExecutionEligibilityFact:
			back, err = execution.DecodeExecutionEligibilityFact(body)
		case execution.KindAttemptNotDispatchedFact:
			back, err = execution.DecodeAttemptNotDispatchedFact(body)
		case execution.KindRunAttemptSetManifest:
			back, err = execution.DecodeRunAttemptSetManifest(body)
		case execution.KindRunExecutionFinalizationFact:
			back, err = execution.DecodeRunExecutionFinalizationFact(body)
		case execution.KindRunExecutionFinalizationConflictFact:
			back, err = execution.DecodeRunExecutionFinalizationConflictFact(body)
		case execution.KindGatewayRouteSnapshot:
			back, err = execution.DecodeGatewayRouteSnapshot(body)
		case execution.KindAttemptRouteBinding:
			back, err = execution.DecodeAttemptRouteBinding(body)
		case execution.KindGatewayPreBindingRejectionFact:
			back, err = execution.DecodeGatewayPreBindingRejectionFact(body)
		case execution.KindProviderEvidence:
			back, err = execution.DecodeProviderEvidence(body)
		case execution.KindAvailabilitySnapshot:
			back, err = execution.DecodeAvailabilitySnapshot(body)
		case execution.KindRunExecutionFinalizationReceipt:
			back, err = execution.DecodeRunExecutionFinalizationReceipt(body)
		case execution.KindAvailabilityCurrentValidationReceipt:
			back, err = execution.DecodeAvailabilityCurrentValidationReceipt(body)
		case execution.KindExecutionEligibilityConflictFact:
			back, err = execution.DecodeExecutionEligibilityConflictFact(body)
		case execution.KindGatewayEvidenceConflictFact:
			back, err = execution.DecodeGatewayEvidenceConflictFact(body)
		}
		require.NoError(t, err)
		require.Equal(t, g.obj, back, g.kind+"/"+g.name)
	}
}
