package simprovider_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/gateway/simprovider"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func manifest(t *testing.T) (*contract.AttemptExecutionManifest, []byte) {
	t.Helper()
	id := uuid.NewString()
	m := &contract.AttemptExecutionManifest{
		Manifest: strict.Quadruple{Ref: "aem-" + id}, RunID: uuid.NewString(), RunStepID: uuid.NewString(), ExecutionAttemptID: id,
		RunAdmissionManifest: strict.Quadruple{Ref: "ram-x", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "4444444444444444444444444444444444444444444444444444444444444444"},
		ModelDeploymentID: "model-deploy/sim", GatewayDeploymentID: "gw-sim-1", RoutingPolicyRevision: 1,
		OutputContract: strict.Quadruple{Ref: "output-contract/text@1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "5555555555555555555555555555555555555555555555555555555555555555"},
		ChargeDimensionRegistryVersion: "oceanway-charge-dimension-registry@1",
		ChargeDimensionKeys:            []string{"text.input_tokens", "text.output_tokens"},
		CreatedAt:                      time.Now().UTC().Truncate(time.Microsecond),
	}
	body, err := contract.Seal(m)
	require.NoError(t, err)
	return m, body
}

// GW-1: the simulated adapter is deterministic from its seed; a share of
// attempts is rejected before binding; every workload and scenario occurs.
func TestGW1SimulatedProviderIsDeterministic(t *testing.T) {
	t.Parallel()
	a := simprovider.New(simprovider.Config{Seed: 7, RejectPercent: 20})
	b := simprovider.New(simprovider.Config{Seed: 7, RejectPercent: 20})
	other := simprovider.New(simprovider.Config{Seed: 8, RejectPercent: 20})
	workloads, scenarios := map[string]bool{}, map[string]bool{}
	rejected, differs := 0, 0
	for i := 0; i < 300; i++ {
		m, _ := manifest(t)
		da, db := a.Route(m), b.Route(m)
		require.Equal(t, da, db)
		if da != other.Route(m) {
			differs++
		}
		if da.Route == nil {
			rejected++
		}
		workloads[a.Workload(m.ExecutionAttemptID)] = true
		scenarios[a.Scenario(m.ExecutionAttemptID)] = true
	}
	require.Len(t, workloads, 3)
	require.Len(t, scenarios, len(simprovider.Scenarios))
	require.InDelta(t, 60, rejected, 30)
	require.Positive(t, differs, "another seed decides differently")
}

// GW-2: every scenario's observations drive a bound attempt's chains
// through the Gateway: late (pending → available), missing (not_reported
// cost), corrected (a second available version), conflicting, unavailable.
func TestGW2SimulatedScenariosThroughTheGateway(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway},
		Lines: []migrate.Line{outboxschema.Line(), gatewayschema.Line()}, MaxConns: 4}).Gateway()
	_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	svc := gateway.New(pool)
	tenant := contract.Tenant{Kind: "organization", TenantID: uuid.NewString(), WorkspaceID: uuid.NewString()}
	final := map[string]map[string]string{}
	for _, sc := range simprovider.Scenarios {
		p := simprovider.New(simprovider.Config{Seed: 1, Force: sc})
		m, body := manifest(t)
		reply, err := svc.Dispatch(t.Context(), gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: p.Route(m)})
		require.NoError(t, err)
		require.Equal(t, gatewayread.SlotBound, reply.State)
		b := &contract.AttemptRouteBinding{SlotKey: contract.SlotKey{ExecutionAttemptID: m.ExecutionAttemptID}}
		obs, err := p.Execute(t.Context(), b)
		require.NoError(t, err)
		final[sc] = map[string]string{}
		versions := map[string]int64{}
		for _, o := range obs {
			adv, err := svc.Observe(t.Context(), m.ExecutionAttemptID, o)
			require.NoError(t, err)
			key := o.EvidenceKind + "/" + o.DimensionKey
			require.Equal(t, versions[key]+1, adv.Snapshot.StateVersion, "%s %s dense", sc, key)
			versions[key] = adv.Snapshot.StateVersion
			final[sc][o.EvidenceKind] = adv.Snapshot.State
		}
	}
	require.Equal(t, contract.AvailabilityAvailable, final[simprovider.ScenarioLate][contract.EvidenceProviderCost])
	require.Equal(t, contract.AvailabilityNotReported, final[simprovider.ScenarioMissing][contract.EvidenceProviderCost])
	require.Equal(t, contract.AvailabilityUnavailable, final[simprovider.ScenarioUnavailable][contract.EvidenceProviderUsage])
	var corrected int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT max(state_version) FROM gateway.availability_snapshots s JOIN gateway.dispatch_slots d USING (execution_attempt_id)").Scan(&corrected))
	require.GreaterOrEqual(t, corrected, 2)
}

// GW-1 (demo realism, issue 16 item 6): the realistic weights make the
// evidence the reconciliation chain needs rare but present, and the
// post-finality corrections go down (refund) and up (late exposure) from the
// first dimension's original report; other scenarios correct nothing later.
func TestGW1RealisticWeightsAndPostFinalityCorrections(t *testing.T) {
	t.Parallel()
	p := simprovider.New(simprovider.Config{Seed: 1, Weights: simprovider.RealisticWeights})
	counts := map[string]int{}
	const n = 4000
	for i := 0; i < n; i++ {
		id := uuid.NewString()
		sc := p.Scenario(id)
		counts[sc]++
		b := &contract.AttemptRouteBinding{SlotKey: contract.SlotKey{ExecutionAttemptID: id}}
		obs, err := p.Execute(t.Context(), b)
		require.NoError(t, err)
		later := p.AfterFinality(id)
		switch sc {
		case simprovider.ScenarioCorrectedDown, simprovider.ScenarioCorrectedUp:
			require.Equal(t, contract.AvailabilityAvailable, obs[0].State)
			if len(later) == 0 {
				require.Equal(t, simprovider.ScenarioCorrectedDown, sc, "only a quantity of 1 cannot go down")
				require.Equal(t, "1", obs[0].Quantity)
				continue
			}
			require.Len(t, later, 1)
			require.Equal(t, obs[0].DimensionKey, later[0].DimensionKey)
			require.Equal(t, contract.AvailabilityAvailable, later[0].State)
			orig, corrected := mustUint(t, obs[0].Quantity), mustUint(t, later[0].Quantity)
			if sc == simprovider.ScenarioCorrectedDown {
				require.Less(t, corrected, orig)
				require.Positive(t, corrected)
			} else {
				require.Greater(t, corrected, orig)
			}
		default:
			require.Empty(t, later, sc)
		}
	}
	for _, sc := range simprovider.Scenarios {
		require.Positive(t, counts[sc], "%s occurs", sc)
	}
	needsReconciliation := counts[simprovider.ScenarioConflicting] + counts[simprovider.ScenarioUnavailable]
	require.Less(t, needsReconciliation, n*8/100, "rare: a few percent")
	require.Greater(t, counts[simprovider.ScenarioPrompt]+counts[simprovider.ScenarioLate], n/2)
	require.Equal(t, p.Scenario("00000000-0000-4000-8000-000000000001"),
		simprovider.New(simprovider.Config{Seed: 1, Weights: simprovider.RealisticWeights}).Scenario("00000000-0000-4000-8000-000000000001"))
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err)
	return v
}

// GW-1 (issue 31 item 8): the owner-side fix of a reconciliation case. For
// conflicting and unavailable usage, Reconciled reports exactly the usage
// dimensions Execute left without trustworthy usage, available (the
// conflicting one at its first report's quantity); cost evidence is left
// alone; every other scenario needs no fix.
func TestGW1ReconciledSettlesWhatTheProviderCouldNotVouchFor(t *testing.T) {
	t.Parallel()
	for _, sc := range simprovider.Scenarios {
		p := simprovider.New(simprovider.Config{Seed: 3, Force: sc})
		for range 20 {
			id := uuid.NewString()
			obs, err := p.Execute(t.Context(), &contract.AttemptRouteBinding{SlotKey: contract.SlotKey{ExecutionAttemptID: id}})
			require.NoError(t, err)
			// The usage dimensions Execute leaves not available, and the
			// quantity each was first reported at.
			current, first := map[string]string{}, map[string]string{}
			for _, o := range obs {
				if o.EvidenceKind != contract.EvidenceProviderUsage {
					continue
				}
				current[o.DimensionKey] = o.State
				if _, ok := first[o.DimensionKey]; !ok && o.Quantity != "" {
					first[o.DimensionKey] = o.Quantity
				}
			}
			var unsettled []string
			for dim, st := range current {
				if st != contract.AvailabilityAvailable {
					unsettled = append(unsettled, dim)
				}
			}
			fix := p.Reconciled(id)
			if sc != simprovider.ScenarioConflicting && sc != simprovider.ScenarioUnavailable {
				require.Nil(t, fix, sc)
				require.Empty(t, unsettled, sc)
				continue
			}
			require.NotEmpty(t, unsettled, sc)
			fixed := make([]string, 0, len(fix))
			for _, o := range fix {
				require.Equal(t, contract.EvidenceProviderUsage, o.EvidenceKind, "the cost lane is left alone")
				require.Equal(t, contract.AvailabilityAvailable, o.State)
				require.NotEmpty(t, o.ReportID)
				require.Positive(t, mustUint(t, o.Quantity))
				if q, ok := first[o.DimensionKey]; ok {
					require.Equal(t, q, o.Quantity, "the conflicting reports reconciled at the first one")
				}
				fixed = append(fixed, o.DimensionKey)
			}
			require.ElementsMatch(t, unsettled, fixed, sc)
			require.Equal(t, fix, p.Reconciled(id), "deterministic")
		}
	}
}

// Issue 32 (GW-2): a disputed attempt's Dispute contradicts its first usage
// report (same report id, another quantity): through the Gateway it stores
// a GatewayEvidenceConflictFact@1 and a disputed availability; DisputeFix
// is a corrected report (a new id) that advances the chain to evidence the
// Gateway vouches for. Other scenarios dispute nothing.
func TestGW2DisputedReportThenFixedThroughTheGateway(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway},
		Lines: []migrate.Line{outboxschema.Line(), gatewayschema.Line()}, MaxConns: 4}).Gateway()
	_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	svc := gateway.New(pool)
	tenant := contract.Tenant{Kind: "organization", TenantID: uuid.NewString(), WorkspaceID: uuid.NewString()}
	p := simprovider.New(simprovider.Config{Seed: 5, Force: simprovider.ScenarioDisputed})
	m, body := manifest(t)
	reply, err := svc.Dispatch(t.Context(), gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: p.Route(m)})
	require.NoError(t, err)
	obs, err := p.Execute(t.Context(), &contract.AttemptRouteBinding{SlotKey: contract.SlotKey{ExecutionAttemptID: m.ExecutionAttemptID}})
	require.NoError(t, err)
	for _, o := range obs {
		_, err := svc.Observe(t.Context(), m.ExecutionAttemptID, o)
		require.NoError(t, err)
	}
	d := p.Dispute(m.ExecutionAttemptID)
	require.Len(t, d, 1)
	adv, err := svc.Observe(t.Context(), m.ExecutionAttemptID, d[0])
	require.NoError(t, err)
	require.NotNil(t, adv.Conflict)
	require.Equal(t, gateway.ReasonReportDisputed, adv.Snapshot.ReasonCode)
	req := gatewayread.ProviderEvidenceRead{ContractVersion: gatewayread.ReadProviderEvidenceV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, Binding: reply.Binding,
		EvidenceKind: d[0].EvidenceKind, DimensionKey: d[0].DimensionKey, Evidence: adv.Snapshot.Evidence}
	res, err := gateway.ReadProviderEvidence(t.Context(), pool, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, res.Answer)
	require.Equal(t, adv.Conflict.Fact, res.Conflict.Fact)

	fix := p.DisputeFix(m.ExecutionAttemptID)
	require.Len(t, fix, 1)
	fixed, err := svc.Observe(t.Context(), m.ExecutionAttemptID, fix[0])
	require.NoError(t, err)
	require.Nil(t, fixed.Conflict)
	req.Evidence = fixed.Snapshot.Evidence
	res, err = gateway.ReadProviderEvidence(t.Context(), pool, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.Equal(t, fix[0].Quantity, res.Value.Quantity)
	require.NotEqual(t, d[0].ReportID, fix[0].ReportID, "a corrected report has its own id")

	other := simprovider.New(simprovider.Config{Seed: 5, Force: simprovider.ScenarioPrompt})
	require.Nil(t, other.Dispute(m.ExecutionAttemptID))
	require.Nil(t, other.DisputeFix(m.ExecutionAttemptID))
}
