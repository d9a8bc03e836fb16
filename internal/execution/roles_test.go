package execution_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

func rolePool(t *testing.T, dsn, role string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 2
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE "+role)
		return err
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// EX-2, EX-3, GW-1, GW-2 as the least-privileged roles: the Execution owner
// runs as oceanway_execution and the Gateway owner as oceanway_gateway
// (grants: select/insert, the state/pointer columns only); under those
// roles the whole path works, and the database refuses what the roles must
// not do.
func TestOwnersRunAsLeastPrivilegedRoles(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway},
		Lines:      []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), executionschema.Line(), gatewayschema.Line()},
		MaxConns:   3,
	})
	ctx := t.Context()
	for _, bd := range []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway} {
		_, err := release.Bootstrap(ctx, b.Pool(bd), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
		require.NoError(t, err)
	}
	execPool := rolePool(t, b.DSNs[boundary.Execution], executionschema.RoleExecution)
	gwPool := rolePool(t, b.DSNs[boundary.Gateway], gatewayschema.RoleGateway)
	svc := execution.New(execPool, admission.Reads{DB: b.Core()})
	svc.SetGatewayReads(gateway.Reads{DB: gwPool})
	gw := gateway.New(gwPool)

	res, err := admission.New(b.Core()).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 10})
	require.NoError(t, err)
	_, token, err := admission.IssueRunExecutionToken(ctx, b.Core(), res.RunID, "ret-"+res.RunID, time.Now())
	require.NoError(t, err)
	st, err := svc.OpenRun(ctx, token)
	require.NoError(t, err)
	for i, reject := range []bool{false, true} {
		a, err := svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
		require.NoError(t, err, i)
		d := gateway.Decision{Route: &contract.Route{ChannelID: "c", SupplyID: "s", CredentialVersion: 1, ProviderModel: "m", AdapterID: "a"}}
		disp := contract.DispositionDispatched
		if reject {
			d, disp = gateway.Decision{RejectReason: "no_capacity"}, contract.DispositionNotDispatched
		}
		_, err = gw.Dispatch(ctx, gateway.DispatchRequest{Tenant: st.Tenant, ManifestBody: a.Body, Decision: d})
		require.NoError(t, err)
		if !reject {
			for _, state := range []string{contract.AvailabilityPending, contract.AvailabilityNotReported} {
				_, err = gw.Observe(ctx, a.Manifest.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderCost,
					DimensionKey: "cost.usd", State: state, ReasonCode: "r"})
				require.NoError(t, err)
			}
		}
		_, err = svc.FinalizeEligibility(ctx, a.Manifest.ExecutionAttemptID, disp)
		require.NoError(t, err)
	}
	c, err := svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)
	require.Len(t, c.Fact.Attempts, 2)

	for _, stmt := range []string{
		"UPDATE execution.attempts SET gateway_deployment_id = 'x'",
		"UPDATE execution.run_execution_states SET billing_account_id = gen_random_uuid()",
		"DELETE FROM execution.eligibility_facts",
	} {
		_, err := execPool.Exec(ctx, stmt)
		require.ErrorContains(t, err, "permission denied", stmt)
	}
	for _, stmt := range []string{
		"UPDATE gateway.dispatch_slots SET manifest_body = '{}'",
		"DELETE FROM gateway.provider_evidence",
		"UPDATE gateway.availability_currents SET evidence_dimension_key = 'x'",
	} {
		_, err := gwPool.Exec(ctx, stmt)
		require.ErrorContains(t, err, "permission denied", stmt)
	}
}
