package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/gateway"
)

// TestGuardGoSlotKeyConflict (GW-1): an attempt's dispatch slot belongs to
// one slot key (attempt, gateway deployment, attempt manifest); a dispatch
// of the same attempt under another deployment and manifest is
// ErrSlotKeyConflict with nothing written, never answered with the slot's
// stored reply (a bound or rejected reply is returned only to its own key).
// Clause: GW-1.slot-key-conflict.
func TestGuardGoSlotKeyConflict(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	for _, decision := range []gateway.Decision{{Route: route("channel/eu")}, {RejectReason: "no_capacity"}} {
		m, body := manifest(t)
		_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: decision})
		require.NoError(t, err)
		other := *m
		other.GatewayDeploymentID = "gw-us-2"
		other.Manifest.Ref = "aem-other-" + m.ExecutionAttemptID
		otherBody, err := contract.Seal(&other)
		require.NoError(t, err)
		before := counts(t, pool)
		_, err = svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: otherBody, Decision: decision})
		require.ErrorIs(t, err, gateway.ErrSlotKeyConflict) // GW-1.slot-key-conflict
		require.Equal(t, before, counts(t, pool), "nothing written")
	}
}
