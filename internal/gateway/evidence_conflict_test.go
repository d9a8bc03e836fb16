package gateway_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// Issue 32 (GW-2, gateway_usage_owner_conflict): a provider report that
// contradicts the current evidence (the same report id, another quantity)
// stores one GatewayEvidenceConflictFact@1 and advances the chain to a
// disputed availability that still cites the evidence;
// readGatewayProviderEvidence then answers conflicting with the stored fact
// (its quadruple and canonical body). The same contradiction again is
// insert-or-compare (the first fact, the chain unchanged); another
// contradicting quantity is ErrEvidenceConflictDiffers
// (GW-2.evidence-conflict-differs) and writes nothing; the provider's
// corrected report (a new report id) advances the chain to evidence the
// Gateway vouches for again.
func TestGW2EvidenceConflictFactStoredAndAnswered(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	usage := func(qty, report string) gateway.Observation {
		return gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
			State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: qty, ReportID: report}
	}
	first := observe(t, svc, m.ExecutionAttemptID, usage("1200", "r1"))
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	req := gatewayread.ProviderEvidenceRead{ContractVersion: gatewayread.ReadProviderEvidenceV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, Binding: first.Snapshot.Binding,
		EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens", Evidence: first.Snapshot.Evidence}
	res, err := gateway.ReadProviderEvidence(ctx, role, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.Nil(t, res.Conflict)

	disputed := observe(t, svc, m.ExecutionAttemptID, usage("1300", "r1"))
	require.False(t, disputed.Unchanged)
	require.NotNil(t, disputed.Conflict)
	require.Equal(t, int64(2), disputed.Snapshot.StateVersion)
	require.Equal(t, gateway.ReasonReportDisputed, disputed.Snapshot.ReasonCode)
	require.Equal(t, first.Snapshot.Evidence, disputed.Snapshot.Evidence, "the disputed availability still cites the contested evidence")
	require.Equal(t, first.Snapshot.Evidence, disputed.Conflict.Evidence)
	require.Equal(t, "1300", disputed.Conflict.ConflictingQuantity)

	res, err = gateway.ReadProviderEvidence(ctx, role, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, res.Answer)
	require.Equal(t, disputed.Conflict, res.Conflict)
	back, err := contract.DecodeGatewayEvidenceConflictFact(res.ConflictBody)
	require.NoError(t, err)
	require.Equal(t, disputed.Conflict.Fact, back.Fact)

	again := observe(t, svc, m.ExecutionAttemptID, usage("1300", "r1"))
	require.True(t, again.Unchanged)
	require.Equal(t, disputed.Conflict.Fact, again.Conflict.Fact, "insert-or-compare: the first fact")
	_, err = svc.Observe(ctx, m.ExecutionAttemptID, usage("1400", "r1"))
	require.ErrorIs(t, err, gateway.ErrEvidenceConflictDiffers) // GW-2.evidence-conflict-differs
	require.Equal(t, 1, count(t, pool, "gateway.evidence_conflict_facts"))
	require.Equal(t, 2, count(t, pool, "gateway.availability_snapshots"))

	fixed := observe(t, svc, m.ExecutionAttemptID, usage("1250", "r2-corrected"))
	require.Equal(t, int64(3), fixed.Snapshot.StateVersion)
	fixedReq := req
	fixedReq.Evidence = fixed.Snapshot.Evidence
	res, err = gateway.ReadProviderEvidence(ctx, role, fixedReq)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.Equal(t, "1250", res.Value.Quantity)
}

// Issue 32: two sessions reporting the same contradiction at once store one
// fact; both return it (real concurrent sessions; the chain's row lock and
// the unique evidence key serialize them).
func TestGW2EvidenceConflictConcurrentOneFact(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	o := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: "10", ReportID: "r1"}
	observe(t, svc, m.ExecutionAttemptID, o)
	o.Quantity = "11"
	var wg sync.WaitGroup
	facts := make([]*contract.GatewayEvidenceConflictFact, 4)
	errs := make([]error, 4)
	for i := range facts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := svc.Observe(context.WithoutCancel(ctx), m.ExecutionAttemptID, o)
			facts[i], errs[i] = a.Conflict, err
		}()
	}
	wg.Wait()
	var first *contract.GatewayEvidenceConflictFact
	for i := range facts {
		if errs[i] != nil {
			require.ErrorIs(t, errs[i], gateway.ErrChainMoved)
			continue
		}
		if first == nil {
			first = facts[i]
		}
		require.Equal(t, first.Fact, facts[i].Fact)
	}
	require.NotNil(t, first, "at least one session stored or found the fact")
	require.Equal(t, 1, count(t, pool, "gateway.evidence_conflict_facts"))
}

// Issue 32: the database refuses a changed, deleted, truncated or forged
// evidence conflict fact, even as the table owner: UPDATE/DELETE
// (GW001.evidence-conflict-insert-only), TRUNCATE
// (GW001.evidence-conflict-no-truncate), a body that does not name its own
// columns or the evidence it contests (GW011.conflict-fact-forged), and a
// "conflict" that repeats the evidence's own quantity
// (GW011.conflict-quantity-agrees); oceanway_gateway may only insert and read.
func TestGW011EvidenceConflictFactGuarded(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	o := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: "10", ReportID: "r1"}
	observe(t, svc, m.ExecutionAttemptID, o)
	o.Quantity = "12"
	d := observe(t, svc, m.ExecutionAttemptID, o)
	require.NotNil(t, d.Conflict)
	const table = "gateway.evidence_conflict_facts"
	for _, stmt := range []string{
		"UPDATE " + table + " SET fact_body = fact_body",
		"UPDATE " + table + " SET detected_at = now()",
		"DELETE FROM " + table,
	} {
		err := execAsTx(ctx, pool, "", stmt)
		require.Equal(t, gateway.CodeImmutable, db.SQLState(err), "%s: %v", stmt, err)
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execAsTx(ctx, pool, gatewayschema.RoleGateway, stmt)), stmt)
	}
	err = execAsTx(ctx, pool, "", "TRUNCATE "+table)
	require.Equal(t, gateway.CodeImmutable, db.SQLState(err), "TRUNCATE: %v", err)

	// Forged inserts (as the Gateway role; the stored fact is the template).
	insert := func(ref, set string) error {
		return execAsTx(ctx, pool, gatewayschema.RoleGateway, `INSERT INTO gateway.evidence_conflict_facts
			SELECT '`+ref+`', gateway_evidence_conflict_fact_schema_version, gateway_evidence_conflict_fact_digest_algorithm_version,
			       gateway_evidence_conflict_fact_digest, provider_evidence_ref, execution_attempt_id, `+set+`, detected_at
			  FROM gateway.evidence_conflict_facts`)
	}
	// Another ref than the body's: forged (GW011.conflict-fact-forged).
	require.Equal(t, gateway.CodeConflictFactForged, db.SQLState(insert("gec-forged", "fact_body")))
	// The body names other evidence (a different report id).
	require.Equal(t, gateway.CodeConflictFactForged, db.SQLState(insert("gec-other",
		`jsonb_set(jsonb_set(fact_body::jsonb, '{gatewayEvidenceConflictFactRef}', '"gec-other"'), '{providerReportId}', '"r9"')::text`)))
	// The body repeats the evidence's own quantity (GW011.conflict-quantity-agrees).
	require.Equal(t, gateway.CodeConflictFactForged, db.SQLState(insert("gec-agrees",
		`jsonb_set(jsonb_set(fact_body::jsonb, '{gatewayEvidenceConflictFactRef}', '"gec-agrees"'), '{conflictingQuantity}', '"10"')::text`)))
	require.Equal(t, 1, count(t, pool, table))
}
