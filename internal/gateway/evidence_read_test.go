package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// GW-2 / ME-1: readGatewayProviderEvidence@1, the metering worker's
// event-bound read of the evidence an availability snapshot references, as
// the gateway role: found only for the exact quadruple and identities,
// not_found for an unknown ref, conflicting for another identity, an
// invalid request refused.
func TestGW2ReadProviderEvidenceEventBound(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	a := observe(t, svc, m.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: "1200", ReportID: "r1"})
	require.NotNil(t, a.Evidence)
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	req := gatewayread.ProviderEvidenceRead{ContractVersion: gatewayread.ReadProviderEvidenceV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, Binding: a.Snapshot.Binding,
		EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens", Evidence: a.Snapshot.Evidence}

	res, err := gateway.ReadProviderEvidence(ctx, role, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.Equal(t, "1200", res.Value.Quantity)

	other := req
	other.DimensionKey = "text.output_tokens"
	res, err = gateway.ReadProviderEvidence(ctx, role, other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, res.Answer)

	missing := req
	missing.Evidence = strict.Quadruple{Ref: "gpe-missing", SchemaVersion: "1", DigestAlgorithmVersion: req.Evidence.DigestAlgorithmVersion, Digest: req.Evidence.Digest}
	res, err = gateway.ReadProviderEvidence(ctx, role, missing)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, res.Answer)

	bad := req
	bad.ContractVersion = "readGatewayProviderEvidence@0"
	_, err = gateway.ReadProviderEvidence(ctx, role, bad)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
}
