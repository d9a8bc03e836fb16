package billing_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/workload"
)

const (
	grantIssuer = "core.grants"
	alice       = "workforce:alice@example.org"
	bob         = "workforce:bob@example.org"
	gatewayName = "admin.command-gateway"
)

// resolver signs grants as Core and verifies them as Billing does.
type resolver struct {
	signer   *grants.Signer
	verifier *grants.Verifier
}

func newResolver(t *testing.T) resolver {
	t.Helper()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	s, err := grants.NewSigner(grantIssuer, priv)
	require.NoError(t, err)
	v, err := grants.NewVerifier(grantIssuer, pub)
	require.NoError(t, err)
	return resolver{signer: s, verifier: v}
}

// inCase admits r, applies its closure and a settlement input, and enters
// its first case generation.
func (b *bundle) inCase(t *testing.T, r run) reconciliation.Case {
	t.Helper()
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	_, err = b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	return b.enterCase(t, r, 1)
}

func (b *bundle) enterCase(t *testing.T, r run, gen int64) reconciliation.Case {
	t.Helper()
	id := caseOf(r, gen)
	_, err := b.reconcile(t, r, id)
	require.NoError(t, err)
	return reconciliation.Case{ReconciliationCaseRef: id.CaseRef, ReconciliationGeneration: gen, Identity: id.Identity,
		BillingAccountID: r.accountID, BillingReservationID: r.reservationID, RunID: r.runID, FenceID: r.fenceID}
}

func (rs resolver) command(t *testing.T, c reconciliation.Case, now time.Time) (billing.ResolutionCommand, *billingtest.Chain) {
	t.Helper()
	ch, err := billingtest.BuildChain(c, alice, bob, gatewayName, now)
	require.NoError(t, err)
	jws, err := rs.signer.Sign(ch.Claims(grantIssuer, now, reconciliation.MaxGrantLifetime))
	require.NoError(t, err)
	return billing.ResolutionCommand{Grant: jws, Candidate: ch.Candidate, Decision: ch.Decision, Now: now}, ch
}

func (b *bundle) apply(t *testing.T, rs resolver, cmd billing.ResolutionCommand) (billing.ResolutionResult, error) {
	t.Helper()
	return tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.ResolutionResult, error) {
		return billing.ApplyResolutionTx(ctx, tx, rs.verifier, cmd)
	})
}

func (b *bundle) resolutionEvent(t *testing.T, eventID string) *envelope.Envelope {
	t.Helper()
	var body []byte
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1`, eventID).Scan(&body))
	e, err := envelope.DecodeEnvelope(body)
	require.NoError(t, err)
	return e
}

// OP-1 (issue 31): the resolution command appends the applied fact and its
// event (actor in the envelope, coordinator and core_operations
// deliveries) and leaves the fence in its case; the coordinator's
// resolution branch then folds every watermark accumulated during the case
// (here a settlement input held for resolution) into a new Work generation
// and leaves the case. A redelivery of the event returns the first receipt.
func TestOP1ResolutionReopensEvaluationWithEveryHeldInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := newResolver(t)
	r := newRun(1)
	c := b.inCase(t, r)
	cmd, ch := rs.command(t, c, time.Now())
	res, err := b.apply(t, rs, cmd)
	require.NoError(t, err)
	require.False(t, res.Replayed)
	require.Equal(t, ch.Decision.ResolutionOperationID(), res.Fact.ResolutionOperationID)
	require.Equal(t, billing.FenceReconciliationRequired, b.fence(t, r.fenceID).State, "only the coordinator reopens")

	var destinations []string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT array_agg(destination ORDER BY destination) FROM outbox.outbox_deliveries
		WHERE event_id = $1`, res.EventID).Scan(&destinations))
	require.Equal(t, []string{"billing_finalization_coordinator", "core_operations"}, destinations)
	ev := b.resolutionEvent(t, res.EventID)
	require.Equal(t, alice, ev.Actor.WorkforcePrincipalID)

	held, err := b.settle(t, r.settlement(1, 3, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementHeldForResolution, held.Outcome)

	out, err := b.deliver(t, ev)
	require.NoError(t, err)
	got, err := receipt.DecodeBillingFinalizationCoordinatorConsumerReceipt(out.ReceiptBody)
	require.NoError(t, err)
	require.Equal(t, receipt.CoordinatorWorkScheduled, got.Outcome.State)
	require.Equal(t, receipt.CoordinatorSourceResolution, got.Source.Kind)
	f := b.fence(t, r.fenceID)
	require.Equal(t, billing.FencePendingEvaluation, f.State)
	require.Equal(t, got.Outcome.Work.WorkGeneration, *f.Active)
	var body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT s.snapshot_body FROM billing.billing_finalization_works w
		JOIN billing.billing_finalization_trigger_snapshots s USING (trigger_snapshot_ref)
		WHERE w.billing_finalization_fence_id = $1 AND w.work_generation = $2`, r.fenceID, *f.Active).Scan(&body))
	require.Contains(t, body, `"settlementInputStateVersion":3`, "the input held during the case is in the new trigger")

	again, err := b.deliver(t, ev)
	require.NoError(t, err)
	require.Equal(t, out.ReceiptBody, again.ReceiptBody, "a redelivery answers the first receipt")
	require.Equal(t, f, b.fence(t, r.fenceID), "and creates no second Work")
}

// OP-1 (issue 31): the resolution command is operation-first. The same
// command after a lost response returns the first fact byte for byte, even
// once the grant has expired; another grant for the same decision (another
// jti) conflicts; a consumed jti bound to another decision is refused; an
// expired grant, a grant signed by another key, a tampered candidate and
// self-approval are refused; a grant of generation N does not apply once
// the fence is in generation N+1. Nothing is written by a refusal.
func TestOP1ResolutionCommandIsOperationFirstAndSingleUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := newResolver(t)
	r := newRun(1)
	c := b.inCase(t, r)
	now := time.Now()

	expired, _ := rs.command(t, c, now.Add(-time.Hour))
	expired.Now = now
	_, err := b.apply(t, rs, expired)
	require.ErrorIs(t, err, billing.ErrGrantExpired)

	cmd, ch := rs.command(t, c, now)
	tampered := cmd
	other, _ := rs.command(t, c, now)
	tampered.Candidate = other.Candidate
	_, err = b.apply(t, rs, tampered)
	require.ErrorIs(t, err, billing.ErrGrantInvalid, "the grant binds exactly its candidate")

	stranger := newResolver(t)
	forged, _ := stranger.command(t, c, now)
	_, err = b.apply(t, rs, forged)
	require.ErrorIs(t, err, billing.ErrGrantInvalid, "signed by a key Core does not hold")

	first, err := b.apply(t, rs, cmd)
	require.NoError(t, err)
	late := cmd
	late.Now = now.Add(2 * reconciliation.MaxGrantLifetime)
	replay, err := b.apply(t, rs, late)
	require.NoError(t, err)
	require.True(t, replay.Replayed)
	require.Equal(t, first.Body, replay.Body)

	second, err := rs.signer.Sign(ch.Claims(grantIssuer, now, reconciliation.MaxGrantLifetime))
	require.NoError(t, err)
	_, err = b.apply(t, rs, billing.ResolutionCommand{Grant: second, Candidate: ch.Candidate, Decision: ch.Decision, Now: now})
	require.ErrorIs(t, err, billing.ErrResolutionConflict, "another grant for an applied decision")

	reused, err := billingtest.BuildChain(c, alice, bob, gatewayName, now)
	require.NoError(t, err)
	claims := reused.Claims(grantIssuer, now, reconciliation.MaxGrantLifetime)
	claims.JTI = first.Fact.GrantJTI
	jws, err := rs.signer.Sign(claims)
	require.NoError(t, err)
	_, err = b.apply(t, rs, billing.ResolutionCommand{Grant: jws, Candidate: reused.Candidate, Decision: reused.Decision, Now: now})
	require.ErrorIs(t, err, billing.ErrGrantReplayed, "a consumed jti never applies again")

	_, err = billingtest.BuildChain(c, alice, alice, gatewayName, now)
	require.ErrorIs(t, err, reconciliation.ErrSelfApproval)

	var resolutions, grants int
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM billing.finalization_reconciliation_resolutions),
		(SELECT count(*) FROM billing.consumed_command_grants)`).Scan(&resolutions, &grants))
	require.Equal(t, 1, resolutions)
	require.Equal(t, 1, grants)

	// Reopen, re-enter generation 2: a fresh grant of generation 1 is stale.
	_, err = b.deliver(t, b.resolutionEvent(t, first.EventID))
	require.NoError(t, err)
	b.enterCase(t, r, 2)
	stale, _ := rs.command(t, c, now)
	_, err = b.apply(t, rs, stale)
	require.ErrorIs(t, err, billing.ErrStaleCaseGeneration)
}

// OP-1 (issue 31): concurrent applies of one grant from eight sessions:
// exactly one writes the fact and consumes the jti; every other answers
// the same fact as a replay.
func TestOP1ConcurrentAppliesOfOneGrantWriteOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := newResolver(t)
	r := newRun(1)
	cmd, _ := rs.command(t, b.inCase(t, r), time.Now())
	var wg sync.WaitGroup
	results := make([]billing.ResolutionResult, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.apply(t, rs, cmd)
		}()
	}
	wg.Wait()
	written := 0
	for i := range results {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].Fact.Applied, results[i].Fact.Applied)
		if !results[i].Replayed {
			written++
		}
	}
	require.Equal(t, 1, written)
}
