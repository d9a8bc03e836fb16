package execution_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/execution"
)

// TestGuardGoTokenManifestMismatch (EX-2): a run execution token whose
// identities (reservation, account) are not those of
// Core's admission manifest for its run is ErrManifestConflict before the
// run's execution state exists, with nothing written: the execution
// database holds no admission row to refuse it, so this check is the
// refusal; the genuine token then opens the run.
// Clause: EX-2.token-manifest-mismatch.
func TestGuardGoTokenManifestMismatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	res, body := e.admit(t)
	tok, err := contract.DecodeRunExecutionToken(body)
	require.NoError(t, err)
	for name, edit := range map[string]func(*contract.RunExecutionToken){
		"reservation": func(x *contract.RunExecutionToken) { x.BillingReservationID = uuid.NewString() },
		"account":     func(x *contract.RunExecutionToken) { x.BillingAccountID = uuid.NewString() },
	} {
		forged := *tok
		edit(&forged)
		forged.Token.Ref = "ret-forged-" + name
		forgedBody, err := contract.Seal(&forged)
		require.NoError(t, err)
		_, err = e.svc.OpenRun(ctx, forgedBody)
		require.ErrorIs(t, err, execution.ErrManifestConflict, name) // EX-2.token-manifest-mismatch
		require.ErrorContains(t, err, "identities differ", name)
	}
	var n int
	require.NoError(t, e.exec.QueryRow(ctx, "SELECT count(*) FROM execution.run_execution_states").Scan(&n))
	require.Zero(t, n, "nothing written")
	st, err := e.svc.OpenRun(ctx, body)
	require.NoError(t, err)
	require.Equal(t, res.BillingReservationID, st.BillingReservationID)
	require.False(t, st.Reopened)
}
