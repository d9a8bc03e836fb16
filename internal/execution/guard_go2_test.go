package execution_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// TestGuardGoEligibilityDispositionConflict: an attempt's eligibility fact
// is unique (EX-3); once it is finalized with one disposition, a request
// for the other one is ErrEligibilityExists, never answered as a replay of
// the stored fact, and writes nothing. Both directions: dispatched after a
// proven not_dispatched (the provider side effect claimed after the fact
// denied it), and not_dispatched (proven by the Gateway) after dispatched.
// Clause: EX-3.eligibility-disposition-conflict.
func TestGuardGoEligibilityDispositionConflict(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	gw := &fakeGateway{}
	e.svc.SetGatewayReads(gw)
	gw.answer, gw.state = ownerread.Found, gatewayread.SlotTerminalRejected

	for _, c := range []struct{ first, second string }{
		{contract.DispositionNotDispatched, contract.DispositionDispatched},
		{contract.DispositionDispatched, contract.DispositionNotDispatched},
	} {
		a, err := e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
		require.NoError(t, err)
		id := a.Manifest.ExecutionAttemptID
		el, err := e.svc.FinalizeEligibility(ctx, id, c.first)
		require.NoError(t, err)
		require.Equal(t, c.first, el.Fact.Disposition)
		before := e.counts(t)

		got, err := e.svc.FinalizeEligibility(ctx, id, c.second) // EX-3.eligibility-disposition-conflict
		require.ErrorIs(t, err, execution.ErrEligibilityExists, "%s after %s", c.second, c.first)
		require.Nil(t, got.Fact)
		require.Equal(t, before, e.counts(t), "a conflicting disposition writes nothing")

		again, err := e.svc.FinalizeEligibility(ctx, id, c.first)
		require.NoError(t, err)
		require.True(t, again.Replayed, "the same disposition still replays")
		require.Equal(t, el.Body, again.Body)
	}
}
