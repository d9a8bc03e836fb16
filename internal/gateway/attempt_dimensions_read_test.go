package gateway_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// BI-1: readAttemptUsageDimensions@1 lists the usage dimensions of a bound
// attempt's availability chains (sorted, each once however many versions
// its chain has; cost chains excluded), empty for an attempt without
// chains; only the Billing finalization audience may ask.
func TestBI1ReadAttemptUsageDimensions(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	id := m.ExecutionAttemptID
	read := func(attempt string) []string {
		t.Helper()
		keys, err := gateway.ReadAttemptUsageDimensions(ctx, pool, gatewayread.AttemptUsageDimensionsRead{
			ContractVersion: gatewayread.ReadAttemptUsageDimensionsV1, Audience: gatewayread.AudienceBillingFinalization, ExecutionAttemptID: attempt})
		require.NoError(t, err)
		return keys
	}
	require.Empty(t, read(id))
	usage := func(dim, state, qty string) gateway.Observation {
		return gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: dim, State: state,
			ReasonCode: "provider_" + state, Quantity: qty, ReportID: "r-" + qty}
	}
	observe(t, svc, id, usage("text.output_tokens", contract.AvailabilityPending, ""))
	observe(t, svc, id, usage("text.input_tokens", contract.AvailabilityAvailable, "12"))
	observe(t, svc, id, usage("text.output_tokens", contract.AvailabilityAvailable, "34"))
	observe(t, svc, id, gateway.Observation{EvidenceKind: contract.EvidenceProviderCost, DimensionKey: "cost.usd", State: contract.AvailabilityNotReported, ReasonCode: "provider_silent"})
	require.Equal(t, []string{"text.input_tokens", "text.output_tokens"}, read(id))
	require.Empty(t, read(uuid.NewString()))
	_, err = gateway.ReadAttemptUsageDimensions(ctx, pool, gatewayread.AttemptUsageDimensionsRead{
		ContractVersion: gatewayread.ReadAttemptUsageDimensionsV1, Audience: gatewayread.AudienceMeteringInput, ExecutionAttemptID: id})
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
}
