package gateway_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

func validationRequest(m *contract.AttemptExecutionManifest, s *contract.AvailabilitySnapshot, op string, basis string) gatewayread.AvailabilityValidationRequest {
	return gatewayread.AvailabilityValidationRequest{ContractVersion: gatewayread.ValidateAvailabilityCurrentV1, Audience: gatewayread.AudienceMeteringInput,
		Purpose: contract.PurposeMeteringEligibilityBasis, OperationID: op,
		BasisDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: basis},
		AvailabilitySnapshotRead: gatewayread.AvailabilitySnapshotRead{ExecutionAttemptID: m.ExecutionAttemptID,
			GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest, EvidenceKind: s.EvidenceKind,
			DimensionKey: s.DimensionKey, StateVersion: s.StateVersion, Snapshot: s.Snapshot}}
}

// GW-2 / metering finding 5: validateEvidenceAvailabilityCurrent@1, the
// operation-bound second stage after the bootstrap read, as the gateway
// role: current for the chain's head, not_current with the current
// five-tuple after an advance, one immutable receipt per operation
// (a replay returns the same bytes; another request under the operation is
// conflicting), an unknown snapshot not_found, a bad request refused with
// nothing written.
func TestGW2ValidateAvailabilityCurrentOperationBound(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	v1 := observe(t, svc, m.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityPending, ReasonCode: "awaiting_provider_report"})
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	basis := "6666666666666666666666666666666666666666666666666666666666666666"

	op1 := uuid.NewString()
	res, err := gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v1.Snapshot, op1, basis))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.True(t, res.Value.Current)
	require.Equal(t, v1.Snapshot.Snapshot, res.Value.Validated)
	first := res.Body

	v2 := observe(t, svc, m.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: "900", ReportID: "r1"})

	// The same operation is answered from its receipt, not re-validated.
	res, err = gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v1.Snapshot, op1, basis))
	require.NoError(t, err)
	require.Equal(t, string(first), string(res.Body))

	res, err = gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v1.Snapshot, uuid.NewString(), basis))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.False(t, res.Value.Current)
	require.Equal(t, v2.Snapshot.Snapshot, res.Value.CurrentSnapshot)
	require.Equal(t, int64(2), res.Value.CurrentStateVersion)
	_, err = contract.DecodeAvailabilityCurrentValidationReceipt(res.Body)
	require.NoError(t, err)

	res, err = gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v2.Snapshot, op1, basis))
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, res.Answer, "op1 validated v1, not v2") // GW-2.validation-operation-conflict

	unknown := validationRequest(m, v2.Snapshot, uuid.NewString(), basis)
	unknown.Snapshot.Ref = "gas-missing"
	res, err = gateway.ValidateAvailabilityCurrent(ctx, role, unknown)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, res.Answer)

	var before int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM gateway.availability_validation_receipts`).Scan(&before))
	for _, mutate := range []func(*gatewayread.AvailabilityValidationRequest){
		func(r *gatewayread.AvailabilityValidationRequest) { r.Purpose = "any" },
		func(r *gatewayread.AvailabilityValidationRequest) { r.OperationID = "" },
		func(r *gatewayread.AvailabilityValidationRequest) { r.BasisDigest.Value = "" },
		func(r *gatewayread.AvailabilityValidationRequest) {
			r.ContractVersion = "validateEvidenceAvailabilityCurrent@0"
		},
	} {
		bad := validationRequest(m, v2.Snapshot, uuid.NewString(), basis)
		mutate(&bad)
		_, err = gateway.ValidateAvailabilityCurrent(ctx, role, bad)
		require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
	}
	var after int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM gateway.availability_validation_receipts`).Scan(&after))
	require.Equal(t, before, after)
	require.Equal(t, 2, after)

	// The receipt is immutable for the role and for the owner (GW001).
	for _, q := range []string{`UPDATE gateway.availability_validation_receipts SET result_state = 'not_current'`,
		`DELETE FROM gateway.availability_validation_receipts`} {
		_, err = role.Exec(ctx, q)
		require.Error(t, err, q)
		_, err = pool.Exec(ctx, q)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, q)
		require.Equal(t, gateway.CodeImmutable, pgErr.Code, q)
	}
}
