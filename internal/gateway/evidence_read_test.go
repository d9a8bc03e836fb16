package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/ownerread"
)

// GW-2 / ME-2: readGatewayProviderEvidence@1 answers found only for the exact
// evidence quadruple with the expected attempt, deployment, kind and
// dimension (the Metering cost worker's event-bound evidence read);
// not_found for an unknown ref; conflicting for another identity or digest;
// an invalid request is refused.
func TestGW2ReadProviderEvidenceIsExact(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	m, body := manifest(t)
	_, err := svc.Dispatch(t.Context(), gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	a := observe(t, svc, m.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderCost, DimensionKey: "cost.usd_micros",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: "1234500", ReportID: "r1"})
	req := gateway.ProviderEvidenceRead{ContractVersion: gateway.ReadProviderEvidenceV1, Audience: gateway.AudienceMeteringInput,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, Binding: a.Snapshot.Binding, EvidenceKind: contract.EvidenceProviderCost,
		DimensionKey: "cost.usd_micros", Evidence: a.Snapshot.Evidence}

	res, err := gateway.ReadProviderEvidence(t.Context(), pool, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.Equal(t, "1234500", res.Value.Quantity)
	require.Equal(t, a.Snapshot.Evidence, res.Value.Evidence)

	other := req
	other.DimensionKey = "cost.usd"
	res, err = gateway.ReadProviderEvidence(t.Context(), pool, other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, res.Answer)

	other = req
	other.Evidence.Digest = a.Snapshot.Snapshot.Digest
	res, err = gateway.ReadProviderEvidence(t.Context(), pool, other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, res.Answer)

	other = req
	other.Evidence.Ref = "gpe-unknown"
	res, err = gateway.ReadProviderEvidence(t.Context(), pool, other)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, res.Answer)

	other = req
	other.Audience = "billing"
	_, err = gateway.ReadProviderEvidence(t.Context(), pool, other)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
}
