package execution_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

// ME-2 / CON-2: readAttemptExecutionManifest@1 is the directed read the
// Metering cost lane calls instead of reading the execution database: found
// only for the attempt's exact manifest quadruple (the stored body, byte for
// byte), not_found for an unknown attempt, conflicting for another manifest,
// and an invalid request (wrong version or audience, a bare attempt id)
// reads nothing.
func TestME2AttemptManifestReadIsExact(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	a, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.NoError(t, err)
	reads := execution.Reads{DB: e.exec}
	req := executionread.AttemptManifestRead{ContractVersion: executionread.ReadAttemptManifestV1,
		Audience: executionread.AudienceMeteringInput, ExecutionAttemptID: a.Manifest.ExecutionAttemptID, AttemptManifest: a.Manifest.Manifest}

	got, err := reads.ReadAttemptManifest(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, got.Answer)
	require.Equal(t, a.Body, got.Body, "the stored manifest bytes")
	require.Equal(t, a.Manifest, got.Value)
	// The Billing finalization worker reads the frozen charge dimension set
	// from the same answer (issue 32 part 4).
	billingReq := req
	billingReq.Audience = executionread.AudienceBillingFinalization
	got, err = reads.ReadAttemptManifest(ctx, billingReq)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, got.Answer)
	require.Equal(t, []string{"text.input_tokens", "text.output_tokens"}, got.Value.ChargeDimensionKeys)

	other := req
	other.AttemptManifest.Digest = "00" + req.AttemptManifest.Digest[2:]
	got, err = reads.ReadAttemptManifest(ctx, other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, got.Answer)
	require.Nil(t, got.Value)

	unknown := req
	unknown.ExecutionAttemptID = uuid.NewString()
	got, err = reads.ReadAttemptManifest(ctx, unknown)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, got.Answer)

	for name, mutate := range map[string]func(r *executionread.AttemptManifestRead){
		"version":  func(r *executionread.AttemptManifestRead) { r.ContractVersion = "readAttemptExecutionManifest@2" },
		"audience": func(r *executionread.AttemptManifestRead) { r.Audience = "operations_projector" },
		"bare id":  func(r *executionread.AttemptManifestRead) { r.AttemptManifest.Digest = "" },
		"attempt":  func(r *executionread.AttemptManifestRead) { r.ExecutionAttemptID = "attempt-1" },
	} {
		bad := req
		mutate(&bad)
		_, err := reads.ReadAttemptManifest(ctx, bad)
		require.ErrorIs(t, err, ownerread.ErrInvalidRequest, name)
	}
}
