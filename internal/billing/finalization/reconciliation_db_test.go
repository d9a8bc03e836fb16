package finalization_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/workload"
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

// OP-1 (issue 31, item 5): only the case generation's applied resolution
// reopens evaluation, and a re-evaluation that still conflicts (the target
// is still above the reservation) enters the next case generation, whose
// identity names the first as its predecessor. The first generation's
// grant is then stale.
func TestOP1ReevaluationThatStillConflictsOpensTheNextGeneration(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1000000", "200000")
	closedWorld(t, k, w)
	ids := cases.Identities{Pool: k.ops}
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{Cases: ids}, finalization.Config{}, nil)
	_, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)

	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	signer, err := grants.NewSigner("core.grants", priv)
	require.NoError(t, err)
	verifier, err := grants.NewVerifier("core.grants", pub)
	require.NoError(t, err)
	first := currentCase(t, k)
	ch, err := billingtest.BuildChain(first, "workforce:alice@example.org", "workforce:bob@example.org", "admin.command-gateway", time.Now())
	require.NoError(t, err)
	jws, err := signer.Sign(ch.Claims("core.grants", time.Now(), reconciliation.MaxGrantLifetime))
	require.NoError(t, err)
	cmd := billing.ResolutionCommand{Grant: jws, Candidate: ch.Candidate, Decision: ch.Decision}
	res, err := db.WithTxV(t.Context(), k.pool, func(ctx context.Context, tx pgx.Tx) (billing.ResolutionResult, error) {
		return billing.ApplyResolutionTx(ctx, tx, verifier, cmd)
	})
	require.NoError(t, err)
	_, err = wk.ProcessOne(t.Context())
	require.ErrorIs(t, err, finalization.ErrNoWork, "the applied fact alone does not reopen: its event does")

	var body []byte
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1`, res.EventID).Scan(&body))
	ev, err := envelope.DecodeEnvelope(body)
	require.NoError(t, err)
	_, err = k.c.Consume(t.Context(), coordinatorDelivery(t, ev))
	require.NoError(t, err)
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, contract.DecisionReconciliationRequired, r.Decision.Outcome, "the owners still disagree")

	second := currentCase(t, k)
	require.EqualValues(t, 2, second.ReconciliationGeneration)
	require.NotEqual(t, first.Identity, second.Identity)
	var predecessor int64
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT predecessor_generation FROM operations.finalization_case_identities
		WHERE case_identity_ref = $1`, second.Identity.Ref).Scan(&predecessor))
	require.EqualValues(t, 1, predecessor)

	stale, err := billingtest.BuildChain(first, "workforce:alice@example.org", "workforce:bob@example.org", "admin.command-gateway", time.Now())
	require.NoError(t, err)
	jws, err = signer.Sign(stale.Claims("core.grants", time.Now(), reconciliation.MaxGrantLifetime))
	require.NoError(t, err)
	_, err = db.WithTxV(t.Context(), k.pool, func(ctx context.Context, tx pgx.Tx) (billing.ResolutionResult, error) {
		return billing.ApplyResolutionTx(ctx, tx, verifier, billing.ResolutionCommand{Grant: jws, Candidate: stale.Candidate, Decision: stale.Decision})
	})
	require.ErrorIs(t, err, billing.ErrStaleCaseGeneration, "an old generation's grant never applies to the next")
}

// currentCase is the case the fence is bound to.
func currentCase(t *testing.T, k *core) reconciliation.Case {
	t.Helper()
	var c reconciliation.Case
	var alg string
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT f.reconciliation_case_ref, f.reconciliation_generation, f.case_identity_ref,
		    f.case_identity_schema_version, f.case_identity_digest_algorithm_version, f.case_identity_digest, s.billing_account_id,
		    f.billing_reservation_id, f.run_id, f.billing_finalization_fence_id
		  FROM billing.billing_finalization_fences f JOIN billing.reservation_states s ON s.billing_reservation_id = f.billing_reservation_id`).
		Scan(&c.ReconciliationCaseRef, &c.ReconciliationGeneration, &c.Identity.Ref, &c.Identity.SchemaVersion, &alg, &c.Identity.Digest,
			&c.BillingAccountID, &c.BillingReservationID, &c.RunID, &c.FenceID))
	c.Identity.DigestAlgorithmVersion = digest.Algorithm(alg)
	return c
}

func coordinatorDelivery(t *testing.T, e *envelope.Envelope) transport.Delivery {
	t.Helper()
	d, err := billingtest.CoordinatorDelivery(e)
	require.NoError(t, err)
	return d
}
