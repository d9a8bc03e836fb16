package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func setup(t *testing.T) (*pgxpool.Pool, *gateway.Service) {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway},
		Lines: []migrate.Line{outboxschema.Line(), gatewayschema.Line()}, MaxConns: 12}).Gateway()
	_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	return pool, gateway.New(pool)
}

var tenant = contract.Tenant{Kind: "organization", TenantID: uuid.NewString(), WorkspaceID: uuid.NewString()}

func manifest(t *testing.T) (*contract.AttemptExecutionManifest, []byte) {
	t.Helper()
	id := uuid.NewString()
	m := &contract.AttemptExecutionManifest{
		Manifest: strict.Quadruple{Ref: "aem-" + id}, RunID: uuid.NewString(), RunStepID: uuid.NewString(), ExecutionAttemptID: id,
		RunAdmissionManifest: strict.Quadruple{Ref: "ram-x", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "4444444444444444444444444444444444444444444444444444444444444444"},
		ModelDeploymentID: "model-deploy/text-large", GatewayDeploymentID: "gw-eu-1", RoutingPolicyRevision: 2,
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

func route(channel string) *contract.Route {
	return &contract.Route{ChannelID: channel, SupplyID: "supply/sim-1", CredentialVersion: 3, ProviderModel: "sim/text-large", AdapterID: "adapter/simulated"}
}

func count(t *testing.T, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

var tables = []string{"gateway.dispatch_slots", "gateway.route_snapshots", "gateway.attempt_route_bindings", "gateway.pre_binding_rejections",
	"gateway.provider_evidence", "gateway.availability_snapshots", "gateway.availability_currents", "outbox.outbox_events", "outbox.outbox_deliveries"}

func counts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	out := map[string]int{}
	for _, tbl := range tables {
		out[tbl] = count(t, pool, tbl)
	}
	return out
}

func slotRead(m *contract.AttemptExecutionManifest) gatewayread.DispatchSlotRead {
	return gatewayread.DispatchSlotRead{ContractVersion: gatewayread.ReadDispatchSlotV1, Audience: gatewayread.AudienceExecutionEligibility,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest}
}

// GW-1: a slot is reserved and advanced to bound (unique binding + route
// snapshot) or terminal_rejected (rejection fact) in one transaction; both
// states absorb; a retry returns the original reply byte for byte, even with
// another decision; the slot read answers the exact key only.
func TestGW1SlotBindsOrRejectsAbsorbingly(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()

	m, body := manifest(t)
	bound, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	require.Equal(t, gatewayread.SlotBound, bound.State)
	again, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, bound.Body, again.Body, "a retry returns the original reply byte for byte")
	ans, err := gateway.ReadDispatchSlot(ctx, pool, slotRead(m))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans.Answer)
	require.Equal(t, gatewayread.SlotBound, ans.Value.State)
	require.Equal(t, bound.Binding, ans.Value.Binding)

	r, rbody := manifest(t)
	rej, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: rbody, Decision: gateway.Decision{RejectReason: "policy_denied"}})
	require.NoError(t, err)
	require.Equal(t, gatewayread.SlotTerminalRejected, rej.State)
	ans, err = gateway.ReadDispatchSlot(ctx, pool, slotRead(r))
	require.NoError(t, err)
	require.Equal(t, gatewayread.SlotTerminalRejected, ans.Value.State)
	require.Equal(t, rej.Rejection, ans.Value.Rejection)
	f, err := contract.DecodeGatewayPreBindingRejectionFact(ans.Value.RejectionBody)
	require.NoError(t, err)
	require.Equal(t, "policy_denied", f.ReasonCode)
	require.Zero(t, count(t, pool, "gateway.route_snapshots WHERE execution_attempt_id = '"+r.ExecutionAttemptID+"'"), "no route for a rejected slot")
	require.Zero(t, count(t, pool, "outbox.outbox_events"), "no event before binding, none for a rejection")

	// Slot read: not_found, conflicting (another manifest quadruple), invalid.
	unknown, _ := manifest(t)
	ans, err = gateway.ReadDispatchSlot(ctx, pool, slotRead(unknown))
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans.Answer)
	other := slotRead(m)
	other.AttemptManifest.Digest = "6666666666666666666666666666666666666666666666666666666666666666"
	ans, err = gateway.ReadDispatchSlot(ctx, pool, other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans.Answer)
	bare := slotRead(m)
	bare.AttemptManifest = strict.Quadruple{Ref: m.Manifest.Ref}
	_, err = gateway.ReadDispatchSlot(ctx, pool, bare)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)

	// The database: terminal states absorb and exclude each other.
	for _, stmt := range []string{
		fmt.Sprintf("UPDATE gateway.dispatch_slots SET state = 'terminal_rejected' WHERE execution_attempt_id = '%s'", m.ExecutionAttemptID),
		fmt.Sprintf("UPDATE gateway.dispatch_slots SET state = 'reserved', reply_body = NULL, terminal_at = NULL WHERE execution_attempt_id = '%s'", r.ExecutionAttemptID),
	} {
		_, err := pool.Exec(ctx, stmt)
		require.ErrorContains(t, err, gateway.CodeIllegalSlotTransition, stmt)
	}
	_, err = pool.Exec(ctx, fmt.Sprintf(`INSERT INTO gateway.pre_binding_rejections VALUES ('gpr-x', '1', 'jcs-sha256-v1', repeat('a', 64), '%s', 'late', '{}', now())`, m.ExecutionAttemptID))
	require.ErrorContains(t, err, gateway.CodeIllegalSlotTransition)
	_, err = pool.Exec(ctx, "DELETE FROM gateway.attempt_route_bindings")
	require.ErrorContains(t, err, gateway.CodeImmutable)
}

// GW-1: 32 concurrent reserve/bind/reject calls on one slot end in one
// terminal state, and every caller gets byte-identical replies.
func TestGW1ConcurrentDispatchOneTerminalState(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	const n = 32
	replies := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			d := gateway.Decision{Route: route(fmt.Sprintf("channel/%d", i))}
			if i%2 == 1 {
				d = gateway.Decision{RejectReason: "no_capacity"}
			}
			r, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: d})
			replies[i], errs[i] = r.Body, err
		}(i)
	}
	close(start)
	wg.Wait()
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i])
		require.Equal(t, string(replies[0]), string(replies[i]), "caller %d", i)
	}
	bound := count(t, pool, "gateway.attempt_route_bindings")
	rejected := count(t, pool, "gateway.pre_binding_rejections")
	require.Equal(t, 1, bound+rejected, "one terminal state")
	require.Equal(t, 1, count(t, pool, "gateway.dispatch_slots"))
	ans, err := gateway.ReadDispatchSlot(ctx, pool, slotRead(m))
	require.NoError(t, err)
	require.NotEqual(t, gatewayread.SlotReserved, ans.Value.State)
}

func observe(t *testing.T, svc *gateway.Service, id string, o gateway.Observation) gateway.Advance {
	t.Helper()
	a, err := svc.Observe(t.Context(), id, o)
	require.NoError(t, err)
	return a
}

// GW-2: every advance writes the evidence (if any), the snapshot, the
// pointer CAS, gateway.evidence-availability.current-changed@1 and its
// metering delivery in one transaction, with a dense state version from 1
// per chain; an unchanged observation writes nothing; a slot that is not
// bound has no chain and never emits the event.
func TestGW2AvailabilityChainsAreDenseAndEmitTheirEvent(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	id := m.ExecutionAttemptID
	usage := func(state, qty, report string) gateway.Observation {
		return gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens", State: state,
			ReasonCode: "provider_" + state, Quantity: qty, ReportID: report}
	}
	a1 := observe(t, svc, id, usage(contract.AvailabilityPending, "", ""))
	require.EqualValues(t, 1, a1.Snapshot.StateVersion)
	a2 := observe(t, svc, id, usage(contract.AvailabilityAvailable, "1200", "r1"))
	require.EqualValues(t, 2, a2.Snapshot.StateVersion)
	require.Equal(t, a1.Snapshot.Snapshot, a2.Snapshot.Predecessor)
	same := observe(t, svc, id, usage(contract.AvailabilityAvailable, "1200", "r1"))
	require.True(t, same.Unchanged)
	a3 := observe(t, svc, id, usage(contract.AvailabilityAvailable, "1250", "r2")) // corrected
	require.EqualValues(t, 3, a3.Snapshot.StateVersion)
	a4 := observe(t, svc, id, usage(contract.AvailabilityConflicting, "", ""))
	require.EqualValues(t, 4, a4.Snapshot.StateVersion)
	c1 := observe(t, svc, id, gateway.Observation{EvidenceKind: contract.EvidenceProviderCost, DimensionKey: "cost.usd", State: contract.AvailabilityNotReported, ReasonCode: "provider_silent"})
	require.EqualValues(t, 1, c1.Snapshot.StateVersion, "another chain starts at 1")

	require.Equal(t, 5, count(t, pool, "gateway.availability_snapshots"))
	require.Equal(t, 2, count(t, pool, "gateway.provider_evidence"))
	require.Equal(t, 5, count(t, pool, "outbox.outbox_events"))
	for _, a := range []gateway.Advance{a1, a2, a3, a4, c1} {
		var body string
		var dest string
		require.NoError(t, pool.QueryRow(ctx, `SELECT e.event_envelope, d.destination FROM outbox.outbox_events e
			JOIN outbox.outbox_deliveries d ON d.event_id = e.event_id WHERE e.event_id = $1`, a.EventID).Scan(&body, &dest))
		require.Equal(t, "metering_input_processor", dest)
		ev, err := envelope.DecodeEnvelope([]byte(body))
		require.NoError(t, err)
		require.Equal(t, a.Snapshot.StateVersion, ev.AggregateRevision)
		p, err := envelope.TypedPayload(ev)
		require.NoError(t, err)
		payload := p.(envelope.GatewayEvidenceAvailabilityCurrentChangedV1Payload)
		require.Equal(t, a.Snapshot.Snapshot, payload.CurrentAvailability())
		require.Equal(t, a.Snapshot.StateVersion, payload.CurrentAvailabilityStateVersion)
	}
	var dense bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT bool_and(n = v) FROM (SELECT state_version v, row_number() OVER (PARTITION BY chain_id ORDER BY state_version) n
		FROM gateway.availability_snapshots) x`).Scan(&dense))
	require.True(t, dense)

	// Not bound: rejected and unknown slots have no chain.
	r, rbody := manifest(t)
	_, err = svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: rbody, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	_, err = svc.Observe(ctx, r.ExecutionAttemptID, usage(contract.AvailabilityPending, "", ""))
	require.ErrorIs(t, err, gateway.ErrNotBound)
	_, err = svc.Observe(ctx, uuid.NewString(), usage(contract.AvailabilityPending, "", ""))
	require.ErrorIs(t, err, gateway.ErrSlotNotFound)
	require.Equal(t, 5, count(t, pool, "outbox.outbox_events"))

	// The database refuses a gap, a pointer jump and a pre-binding snapshot.
	_, err = pool.Exec(ctx, `UPDATE gateway.availability_currents SET current_state_version = current_state_version + 2`)
	require.ErrorContains(t, err, gateway.CodeChainNotDense)
	_, err = pool.Exec(ctx, fmt.Sprintf(`INSERT INTO gateway.availability_snapshots VALUES ('gas-x', '1', 'jcs-sha256-v1', repeat('a', 64),
		gen_random_uuid(), '%s', 1, 'pending', NULL, '{}', gen_random_uuid(), now())`, r.ExecutionAttemptID))
	require.ErrorContains(t, err, gateway.CodeSlotNotBound)
	_, err = pool.Exec(ctx, fmt.Sprintf(`INSERT INTO gateway.availability_snapshots VALUES ('gas-y', '1', 'jcs-sha256-v1', repeat('a', 64),
		gen_random_uuid(), '%s', 7, 'pending', NULL, '{}', gen_random_uuid(), now())`, id))
	require.ErrorContains(t, err, gateway.CodeChainNotDense)
}

// GW-1, GW-2: a failure injected after every write of the dispatch and
// observe transactions leaves no domain row and no outbox row.
func TestGW1GW2FailureAfterEveryWriteRollsBack(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	injected := errors.New("injected")
	fail := func(at string) {
		svc.SetHooks(gateway.Hooks{AfterStep: func(_ context.Context, _ pgx.Tx, step string) error {
			if step == at {
				return injected
			}
			return nil
		}})
	}
	_, body := manifest(t)
	for _, c := range []struct {
		decision gateway.Decision
		steps    []string
	}{
		{gateway.Decision{Route: route("channel/eu")}, []string{"reserve", "route_snapshot", "binding", "slot"}},
		{gateway.Decision{RejectReason: "no_capacity"}, []string{"reserve", "rejection", "slot"}},
	} {
		for _, step := range c.steps {
			before := counts(t, pool)
			fail(step)
			_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: c.decision})
			require.ErrorIs(t, err, injected, step)
			require.Equal(t, before, counts(t, pool), step)
		}
	}
	svc.SetHooks(gateway.Hooks{})
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	obs := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "media.images", State: contract.AvailabilityAvailable,
		ReasonCode: "reported", Quantity: "4", ReportID: "r1"}
	for _, first := range []bool{true, false} {
		for _, step := range []string{"evidence", "snapshot", "pointer", "append"} {
			before := counts(t, pool)
			fail(step)
			_, err := svc.Observe(ctx, m.ExecutionAttemptID, obs)
			require.ErrorIs(t, err, injected, step)
			require.Equal(t, before, counts(t, pool), "first=%v %s", first, step)
		}
		svc.SetHooks(gateway.Hooks{})
		observe(t, svc, m.ExecutionAttemptID, obs)
		// The next round advances an existing chain: a corrected report (a
		// new report id; the same id with another quantity contradicts the
		// evidence, TestGW2EvidenceConflictFactStoredAndAnswered).
		obs.Quantity, obs.ReportID = "5", "r2"
	}
}
