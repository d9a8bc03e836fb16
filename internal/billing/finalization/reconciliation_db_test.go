package finalization_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// OP-1 / BI-1 (issue 31): with Operations' case identities wired, a
// reconciliation_required decision (target above the reservation) reserves
// the fence's first case identity in Operations and enters
// reconciliation_required bound to it, with its case-requested event; no
// ledger row, the reservation stays reserved, and nothing is runnable
// until the case's resolution.
func TestOP1WorkerEntersTheReservedCase(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1000000", "200000") // 1000 + 600 credits > 1500 reserved
	closedWorld(t, k, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{Cases: cases.Identities{Pool: k.ops}}, finalization.Config{}, nil)
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, contract.DecisionReconciliationRequired, r.Decision.Outcome)

	var state, boundRef, reservedRef, reservation string
	var groups int
	require.NoError(t, k.admin.QueryRow(t.Context(), `
		SELECT f.coordination_state, f.case_identity_ref, i.case_identity_ref, r.state,
		       (SELECT count(*) FROM billing.ledger_posting_groups WHERE group_kind = 'finalization')
		  FROM billing.billing_finalization_fences f
		  JOIN operations.finalization_case_identities i USING (billing_finalization_fence_id)
		  JOIN billing.reservation_states r ON r.billing_reservation_id = f.billing_reservation_id`).
		Scan(&state, &boundRef, &reservedRef, &reservation, &groups))
	require.Equal(t, billing.FenceReconciliationRequired, state)
	require.Equal(t, reservedRef, boundRef, "the fence is bound to the identity Operations reserved")
	require.Equal(t, "reserved", reservation)
	require.Zero(t, groups)
	require.Equal(t, 1, k.count(t, "billing.finalization_reconciliation_requests"))
	_, err = wk.ProcessOne(t.Context())
	require.ErrorIs(t, err, finalization.ErrNoWork, "the case holds the fence")
}

// reserveThenFail reserves like Operations does, then fails the Billing
// transaction (the Work that reserved loses: it commits nothing).
type reserveThenFail struct {
	cases.Identities
	calls int
}

var errLostTheFence = errors.New("injected: the generation lost the fence after reserving")

func (r *reserveThenFail) ReserveFinalizationCaseIdentity(ctx context.Context, s operationsread.CaseScope) (operationsread.CaseIdentity, error) {
	id, err := r.Identities.ReserveFinalizationCaseIdentity(ctx, s)
	r.calls++
	if err == nil && r.calls == 1 {
		return operationsread.CaseIdentity{}, errLostTheFence
	}
	return id, err
}

// OP-1 (issue 31): "reserve(G1) → G2 supersedes → G1 commits nothing → G2
// reuses the same identity". The Work that reserved first commits nothing;
// a new input schedules the next Work generation, which reserves again and
// gets the same identity: one identity row, one case request, bound to the
// winning Work.
func TestOP1SupersededWorkLeavesItsCaseIdentityToTheWinner(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1000000", "200000")
	closedWorld(t, k, w)
	flaky := &reserveThenFail{Identities: cases.Identities{Pool: k.ops}}
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{Cases: flaky}, finalization.Config{}, nil)
	_, err := wk.ProcessOne(t.Context())
	require.ErrorIs(t, err, errLostTheFence)
	require.Zero(t, k.count(t, "billing.finalization_reconciliation_requests"), "the losing generation committed nothing")
	require.Equal(t, 1, k.count(t, "operations.finalization_case_identities"), "but its reservation stays")

	var before int64
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT latest_work_generation FROM billing.billing_finalization_fences`).Scan(&before))
	k.settle(t, w, dispatched, "text.input_tokens") // the same current input again: a new generation
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, before+1, r.Work.Generation, "the winner is the newer generation")
	require.Equal(t, 1, k.count(t, "operations.finalization_case_identities"), "the winner reused the identity")
	var gen int64
	var same bool
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT q.work_generation, q.case_identity_ref = i.case_identity_ref
		FROM billing.finalization_reconciliation_requests q JOIN operations.finalization_case_identities i USING (billing_finalization_fence_id)`).
		Scan(&gen, &same))
	require.Equal(t, r.Work.Generation, gen)
	require.True(t, same)
}
