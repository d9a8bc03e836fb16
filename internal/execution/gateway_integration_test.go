package execution_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/execution"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/gateway/simprovider"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
)

// GW-1 end to end on three databases: a slot the real Gateway rejected
// before binding becomes not_dispatched (AttemptNotDispatchedFact@1 names
// the Gateway's rejection fact); a bound slot can never become
// not_dispatched, only dispatched.
func TestGW1NotDispatchedThroughTheGatewayOwnerRead(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway},
		Lines:      []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), executionschema.Line(), gatewayschema.Line()},
		MaxConns:   4,
	})
	ctx := t.Context()
	for _, bd := range []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway} {
		_, err := release.Bootstrap(ctx, b.Pool(bd), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
		require.NoError(t, err)
	}
	e := &env{core: b.Core(), exec: b.Execution(), adm: admission.New(b.Core()),
		svc: execution.New(b.Execution(), admission.Reads{DB: b.Core()})}
	e.svc.SetGatewayReads(gateway.Reads{DB: b.Gateway()})
	gw := gateway.New(b.Gateway())
	st := e.open(t)

	dispatch := func(p *simprovider.Provider) (*contract.AttemptExecutionManifest, gateway.Reply) {
		a, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
		require.NoError(t, err)
		r, err := gw.Dispatch(ctx, gateway.DispatchRequest{Tenant: st.Tenant, ManifestBody: a.Body, Decision: p.Route(a.Manifest)})
		require.NoError(t, err)
		return a.Manifest, r
	}
	rejected, reply := dispatch(simprovider.New(simprovider.Config{Seed: 1, ForceReject: true}))
	require.Equal(t, gatewayread.SlotTerminalRejected, reply.State)
	el, err := e.svc.FinalizeEligibility(ctx, rejected.ExecutionAttemptID, contract.DispositionNotDispatched)
	require.NoError(t, err)
	require.Equal(t, reply.Rejection, el.NotDispatched.Rejection)

	bound, reply := dispatch(simprovider.New(simprovider.Config{Seed: 1}))
	require.Equal(t, gatewayread.SlotBound, reply.State)
	_, err = e.svc.FinalizeEligibility(ctx, bound.ExecutionAttemptID, contract.DispositionNotDispatched)
	require.ErrorIs(t, err, execution.ErrNotProvenRejected)
	_, err = e.svc.FinalizeEligibility(ctx, bound.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)

	// An attempt the Gateway never saw (the side effect state is unknown)
	// is never not_dispatched either.
	unseen, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.NoError(t, err)
	_, err = e.svc.FinalizeEligibility(ctx, unseen.Manifest.ExecutionAttemptID, contract.DispositionNotDispatched)
	require.ErrorIs(t, err, execution.ErrNotProvenRejected)
}
