package catchup_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

const (
	lateIssuer   = "core.command-grants"
	lateGateway  = "admin.command-gateway"
	lateActor    = "workforce:alice@example.com"
	lateApprover = "workforce:bob@example.com"
)

var lateGrantKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))

// LateCommands is the gateway's Billing side.
var _ casegateway.LateBilling = (*catchup.LateCommands)(nil)

// fakeLateIdentities is Operations' late case identity primitive: a
// deterministic reservation per (dimension, generation).
type fakeLateIdentities struct{}

func (fakeLateIdentities) ReserveLateSettlementCaseIdentity(_ context.Context, s operationsread.LateCaseScope) (operationsread.CaseIdentity, error) {
	dimID := s.Dimension.SettlementDimensionID()
	return operationsread.CaseIdentity{Identity: cquad(fmt.Sprintf("lcir-%s-%d", dimID, s.Generation)),
		CaseRef: reconciliation.LateSettlementCaseRef(dimID, s.Generation), Generation: s.Generation,
		CaseRequestOperationID: reconciliation.LateSettlementCaseRequestOperationID(dimID, s.Generation)}, nil
}

// lateFixture is one finalized reservation (settled 100 of 2500 on the
// real ledger) whose dimension has an open late settlement exposure, the
// catch-up worker over it and Billing's late commands.
type lateFixture struct {
	*bundle
	dim      billingc.SettlementDimension
	metering *fakeMetering
	worker   *catchup.Worker
	consumer *catchup.Consumer
	late     *catchup.LateCommands
	now      time.Time
}

func setupLateCommand(t *testing.T) *lateFixture {
	t.Helper()
	f := setupLateFixture(t)
	f.drain(t)
	return f
}

// setupLateFixture is setupLateCommand before the worker ran.
func setupLateFixture(t *testing.T) *lateFixture {
	t.Helper()
	b := setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	dim := billingc.SettlementDimension{BillingReservationID: r.reservationID, BillingAccountID: r.accountID, RunID: r.runID,
		RunStepID: id("step", r.n), ExecutionAttemptID: id("attempt", r.n), ChargeDimensionKey: "tokens.output",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
	d := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "100", "2400")
	_, err = db.WithTxV(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) (billing.CommitResult, error) {
		if err := billingtest.StoreDecisionTx(ctx, tx, d); err != nil {
			return billing.CommitResult{}, err
		}
		res, err := billing.CommitFinalizationTx(ctx, tx, d, billing.CommitOpts{})
		if err != nil {
			return res, err
		}
		return res, catchup.OpenFencesTx(ctx, tx, catchup.OpenParams{
			Tenant:        catchup.Tenant{Kind: res.Fact.TenantKind, ID: res.Fact.TenantID, WorkspaceID: res.Fact.WorkspaceID, ProjectID: res.Fact.ProjectID},
			CorrelationID: id("correlation", r.n), FinalizationCommitted: res.Fact.Committed, FinalizationEventID: res.EventID, Now: occurred,
			Dimensions: []catchup.OpenDimension{{Dimension: dim, SettledInput: settlementInputOf(dim, 1), SettledAmount: "100"}},
		})
	})
	require.NoError(t, err)
	f := &lateFixture{bundle: b, dim: dim, metering: newFakeMetering(), now: catchUpAt.Add(time.Hour)}
	f.metering.append(dim, 1, "100")
	f.metering.append(dim, 2, "130")
	f.consumer, err = catchup.NewConsumer(b.pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second},
		Finalization: catchup.FinalizationFenceObserver{}})
	require.NoError(t, err)
	f.worker, err = catchup.NewWorker(b.pool, catchup.WorkerConfig{Metering: f.metering, Ledger: catchup.TransitionPostings{},
		Cases: fakeLateIdentities{}, Now: func() time.Time { return f.now }})
	require.NoError(t, err)
	verifier, err := catchup.NewLateGrantVerifier(lateIssuer, lateGrantKey.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	f.late = &catchup.LateCommands{Pool: b.pool, Grants: verifier, Metering: f.metering, Now: func() time.Time { return f.now }}
	return f
}

// input makes version v (target) current in Metering and delivers its
// current-changed event to the catch-up consumer.
func (f *lateFixture) input(t *testing.T, v int64, target string) {
	t.Helper()
	f.metering.append(f.dim, v, target)
	_, err := f.consumer.Consume(t.Context(), catchUpDelivery(inputEvent(f.dim, v)))
	require.NoError(t, err)
}

func (f *lateFixture) drain(t *testing.T) {
	t.Helper()
	for range 10 {
		steps, err := f.worker.RunOnce(t.Context())
		require.NoError(t, err)
		if len(steps) == 0 {
			return
		}
	}
	t.Fatal("catch-up did not settle")
}

// openExposure is the dimension's latest exposure.
func (f *lateFixture) openExposure(t *testing.T) *billingc.LateSettlementExposure {
	t.Helper()
	var body string
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT exposure_body FROM billing.late_settlement_exposures
		WHERE settlement_dimension_id = $1 ORDER BY settlement_state_revision DESC LIMIT 1`, f.dim.SettlementDimensionID()).Scan(&body))
	e, err := billingc.DecodeLateSettlementExposure([]byte(body))
	require.NoError(t, err)
	require.NotNil(t, e.Case)
	return e
}

// lateCmd is the gateway's command for one exposure: Operations'
// candidate and decision and Core's signed grant.
type lateCmd struct {
	cand   *reconciliation.LateCandidate
	dec    *reconciliation.LateDecision
	claims *reconciliation.LateGrantClaims
	jws    string
}

func lateCase(e *billingc.LateSettlementExposure) reconciliation.LateCase {
	return reconciliation.LateCase{ReconciliationCaseRef: e.Case.ReconciliationCaseRef, CaseGeneration: e.Case.CaseGeneration,
		Identity: e.Case.Identity, Dimension: e.Dimension}
}

// command builds a sealed candidate and decision for e (variant makes
// another candidate) and signs a grant for them (edit may change the claims
// before signing).
func (f *lateFixture) command(t *testing.T, e *billingc.LateSettlementExposure, variant string, edit func(*reconciliation.LateGrantClaims)) *lateCmd {
	t.Helper()
	ref := reconciliation.ExposureRef(e)
	evidence := []reconciliation.EvidenceReference{{EvidenceKind: "late_settlement_exposure", Object: e.Exposure}}
	req := cquad("lscr-" + e.ExposureID() + variant)
	c := &lateCmd{}
	c.cand = &reconciliation.LateCandidate{CommandRequest: req, ImpactPreview: cquad("lscp-" + variant), Approval: cquad("lsca-" + variant),
		JitActivation: cquad("lscj-" + variant), ActorWorkforcePrincipalID: lateActor, BoundWorkload: lateGateway, Case: lateCase(e),
		Exposure: ref, Evidence: evidence, CreatedAt: f.now.Add(-3 * time.Minute)}
	_, err := reconciliation.SealAddressed(c.cand, "lscc-")
	require.NoError(t, err)
	c.dec = &reconciliation.LateDecision{Candidate: c.cand.Candidate, CommandRequest: req, Case: c.cand.Case, Exposure: ref,
		ActorWorkforcePrincipalID: lateActor, Evidence: evidence, DecidedAt: f.now.Add(-2 * time.Minute)}
	_, err = reconciliation.SealAddressed(c.dec, "lscd-")
	require.NoError(t, err)
	iat := f.now.Add(-time.Minute).Truncate(time.Second)
	c.claims = &reconciliation.LateGrantClaims{Issuer: lateIssuer, Subject: lateActor, JTI: uuid.NewString(), IssuedAt: iat, NotBefore: iat,
		ExpiresAt: iat.Add(reconciliation.MaxGrantLifetime), BoundWorkload: lateGateway, CommandRequest: req, Candidate: c.cand.Candidate,
		Decision: c.dec.Decision, CommandOperationID: c.dec.CommandOperationID(), Case: c.dec.Case, Exposure: ref, Evidence: evidence}
	if edit != nil {
		edit(c.claims)
	}
	c.jws = signLateGrant(t, c.claims)
	return c
}

func signLateGrant(t *testing.T, c *reconciliation.LateGrantClaims) string {
	t.Helper()
	kid, err := workload.KeyID(lateGrantKey.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: lateGrantKey},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	require.NoError(t, err)
	payload, err := c.Marshal()
	require.NoError(t, err)
	jws, err := s.Sign(payload)
	require.NoError(t, err)
	out, err := jws.CompactSerialize()
	require.NoError(t, err)
	return out
}

func (c *lateCmd) with(fd *reconciliation.FundingDecision) catchup.LateSettlementCommand {
	return catchup.LateSettlementCommand{Grant: c.jws, Candidate: c.cand, Decision: c.dec, Funding: fd}
}

// lateCounts is what a late command writes.
type lateCounts struct{ Results, Resolutions, Grants, FundingJTIs, Groups, Events int }

func (f *lateFixture) counts(t *testing.T) lateCounts {
	t.Helper()
	var c lateCounts
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM billing.late_settlement_command_results), (SELECT count(*) FROM billing.late_settlement_exposure_resolutions),
		(SELECT count(*) FROM billing.late_consumed_grants), (SELECT count(*) FROM billing.late_consumed_funding_jtis),
		(SELECT count(*) FROM billing.ledger_posting_groups WHERE group_kind = 'late_settlement_adjustment'),
		(SELECT count(*) FROM outbox.outbox_events WHERE event_type IN ('billing.late-settlement-command-result.committed@1',
		  'billing.case-resolution.applied@1'))`).
		Scan(&c.Results, &c.Resolutions, &c.Grants, &c.FundingJTIs, &c.Groups, &c.Events))
	return c
}

// steps lists the dimension's settlement steps in revision order as
// "from>to kind amount" (transitions and late results).
func (f *lateFixture) steps(t *testing.T) []string {
	t.Helper()
	rows, err := f.admin.Query(t.Context(), `SELECT s FROM (
		SELECT from_settlement_state_revision AS r, concat(from_settlement_state_revision, '>', to_settlement_state_revision, ' ',
		       transition_kind, ' ', transition_amount::text) AS s
		  FROM billing.settlement_transitions WHERE settlement_dimension_id = $1
		UNION ALL
		SELECT from_settlement_state_revision, concat(from_settlement_state_revision, '>', to_settlement_state_revision,
		       ' late_result ', adjustment_amount::text)
		  FROM billing.late_settlement_command_results WHERE settlement_dimension_id = $1) x ORDER BY r`, f.dim.SettlementDimensionID())
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// BI-2 / BI-3 / OP-1 (issue 32 part 2; ADR-031 F → T(open) → Late Result →
// T(correction)): on one dimension of a real finalized reservation, the
// finalization settles 100 (revision 1); a later input of 130 records an
// open exposure of 30 (1>2); Billing's FundingDecision@1 moves the case
// generation to resolving; the granted command commits
// LateSettlementCommandResult@1 2>3 (settled 130), its post-release
// adjustment (wallet debit / revenue credit 30), the exposure's
// BillingCaseResolutionApplied@1, the generation resolved, and both events;
// the next correction (target 120) is a refund 3>4 caused by the late
// result. Revisions are contiguous, the ledger balanced, the events in
// order (guards BC015, BC016, BC017 accept exactly this).
func TestBI2LateSettlementOrderingFinalizationTransitionLateResultCorrection(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	e := f.openExposure(t)
	require.EqualValues(t, 2, e.SettlementStateRevision)
	require.Equal(t, "30", e.ExposureAmount)

	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	require.Equal(t, "30", fd.FundingAmount)
	require.EqualValues(t, 1, fd.BillingAccountSourceRevision)
	require.EqualValues(t, 1, fd.FundingPolicyRevision)
	again, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	require.Equal(t, fd.Decision, again.Decision, "a lost response returns the stored funding decision")
	var state string
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT state FROM billing.late_settlement_cases WHERE settlement_dimension_id = $1`,
		f.dim.SettlementDimensionID()).Scan(&state))
	require.Equal(t, catchup.LateCaseResolving, state)

	out, err := f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.NoError(t, err)
	require.False(t, out.Replayed)
	require.EqualValues(t, 2, out.Result.FromSettlementStateRevision)
	require.Equal(t, "100", out.Result.SettledAmountBefore)
	require.Equal(t, "130", out.Result.SettledAmountAfter)
	require.NoError(t, reconciliation.CheckFundingDecision(fd, cmd.dec, e, f.now))
	require.NoError(t, reconciliation.CheckCaseResolutionApplied(out.Applied, out.Result))
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT state FROM billing.late_settlement_cases WHERE settlement_dimension_id = $1`,
		f.dim.SettlementDimensionID()).Scan(&state))
	require.Equal(t, catchup.LateCaseResolved, state)
	bal := f.balances(t, f.dim.BillingReservationID)
	require.Equal(t, "130", bal["settled_revenue"])
	require.Equal(t, "130", bal["customer_wallet"], "debit-normal: hold 2500 − release 2400 + adjustment 30")

	// The correction: target 120 after the late result is a refund from 130.
	f.metering.append(f.dim, 3, "120")
	f.drain(t)
	require.Equal(t, []string{"1>2 late_settlement_exposure 30", "2>3 late_result 30", "3>4 refund 10"}, f.steps(t))
	st := f.fence(t)
	require.EqualValues(t, 4, st.StateRevision)
	require.Equal(t, "120", st.Settled)
	bal = f.balances(t, f.dim.BillingReservationID)
	require.Equal(t, "120", bal["settled_revenue"])
	require.Equal(t, "0", bal["reservation_hold"])

	var causation, causedBy string
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT transition_body::jsonb -> 'causation' ->> 'kind',
		transition_body::jsonb -> 'causation' ->> 'predecessorLateSettlementCommandResultRef'
		FROM billing.settlement_transitions WHERE settlement_dimension_id = $1 AND from_settlement_state_revision = 3`,
		f.dim.SettlementDimensionID()).Scan(&causation, &causedBy))
	require.Equal(t, billingc.TransitionCausedByLateResult, causation)
	require.Equal(t, out.Result.Result.Ref, causedBy)

	rows, err := f.admin.Query(t.Context(), `SELECT event_type, aggregate_revision FROM outbox.outbox_events
		WHERE event_type LIKE 'billing.%' AND event_type <> 'billing.finalization.committed@1' ORDER BY event_id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var ty string
		var rev int64
		err := r.Scan(&ty, &rev)
		return fmt.Sprintf("%s@%d", ty, rev), err
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		"billing.settlement-transition.committed@1@1", "billing.late-settlement-exposure.case-requested@1@1",
		"billing.late-settlement-command-result.committed@1@2", "billing.case-resolution.applied@1@2",
		"billing.settlement-transition.committed@1@3",
	}, got)
}

func (f *lateFixture) fence(t *testing.T) catchUpFenceState {
	t.Helper()
	var s catchUpFenceState
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT fence_revision, settlement_state_revision, active_work_generation,
		last_evaluated_state_version, coordination_state, settled_amount::text FROM billing.settlement_catch_up_fences
		WHERE settlement_dimension_id = $1`, f.dim.SettlementDimensionID()).
		Scan(&s.Revision, &s.StateRevision, &s.Generation, &s.LastEvaluated, &s.State, &s.Settled))
	return s
}

// OP-1: eight concurrent sessions apply one command: exactly one commits,
// the others (and a later retry after a lost response) get the first
// result back (Replayed); another candidate under the same operation is
// ErrLateCommandConflict.
func TestOP1ConcurrentLateCommandsCommitOnce(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	e := f.openExposure(t)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	var wg sync.WaitGroup
	outs := make([]catchup.LateSettlementOutcome, 8)
	errs := make([]error, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = f.late.ApplyLateSettlementCommand(context.Background(), cmd.with(fd))
		}()
	}
	wg.Wait()
	first := 0
	for i := range outs {
		require.NoError(t, errs[i])
		if !outs[i].Replayed {
			first++
		}
		require.Equal(t, outs[0].Result.Result, outs[i].Result.Result)
	}
	require.Equal(t, 1, first, "exactly one command commits")
	require.Equal(t, lateCounts{Results: 1, Resolutions: 1, Grants: 1, FundingJTIs: 1, Groups: 1, Events: 2}, f.counts(t))

	replay, err := f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.NoError(t, err)
	require.True(t, replay.Replayed)
	require.Equal(t, outs[0].Result.Result, replay.Result.Result)

	other := f.command(t, e, "other", nil)
	other.dec = cmd.dec // the same operation, another candidate and grant
	other.claims.Decision = cmd.dec.Decision
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), other.with(fd))
	require.ErrorIs(t, err, catchup.ErrLateCommandConflict)
	require.Equal(t, lateCounts{Results: 1, Resolutions: 1, Grants: 1, FundingJTIs: 1, Groups: 1, Events: 2}, f.counts(t))
}

// BI-2 / OP-1: refusals write nothing: Metering answers not current
// (ErrSettlementInputNotCurrent); a funding decision for another exposure,
// amount or generation (ErrFundingRefused); the account's funding source
// moved after the decision (ErrFundingRefused; BC014.funding-account-forward
// keeps the revision forward only, +1); a replayed grant jti, then a replayed funding jti, in a new
// command (ErrJTIConsumed).
func TestBI2LateCommandRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	e := f.openExposure(t)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	zero := lateCounts{}

	// Metering: a newer input arrived; the exposure's input is not current.
	f.metering.append(f.dim, 3, "150")
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.ErrorIs(t, err, catchup.ErrSettlementInputNotCurrent)
	require.Equal(t, zero, f.counts(t))
	f.metering.mu.Lock()
	f.metering.chain[f.dim.SettlementDimensionID()] = f.metering.chain[f.dim.SettlementDimensionID()][:2]
	f.metering.answers = map[string]catchup.Validation{}
	f.metering.mu.Unlock()

	// A funding decision for another amount (resealed: Billing never made it).
	forged := *fd
	forged.FundingAmount = "31"
	_, err = reconciliation.SealAddressed(&forged, "fd-")
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(&forged))
	require.ErrorIs(t, err, catchup.ErrFundingRefused)
	// ... for another generation.
	forged = *fd
	forged.Case.CaseGeneration = 2
	forged.Case.ReconciliationCaseRef = reconciliation.LateSettlementCaseRef(f.dim.SettlementDimensionID(), 2)
	_, err = reconciliation.SealAddressed(&forged, "fd-")
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(&forged))
	require.ErrorIs(t, err, catchup.ErrFundingRefused)
	// ... Billing-shaped but not the stored one (another jti).
	forged = *fd
	forged.JTI = uuid.NewString()
	_, err = reconciliation.SealAddressed(&forged, "fd-")
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(&forged))
	require.ErrorIs(t, err, catchup.ErrFundingRefused)
	require.Equal(t, zero, f.counts(t))

	// The account's funding source moved: the decision is stale (BC014: +1 only).
	_, err = f.pool.Exec(t.Context(), `UPDATE billing.funding_accounts SET source_revision = source_revision + 2
		WHERE billing_account_id = $1`, f.dim.BillingAccountID)
	requireSQLState(t, err, catchup.CodeFundingAccountForward)
	_, err = f.pool.Exec(t.Context(), `UPDATE billing.funding_accounts SET source_revision = source_revision + 1
		WHERE billing_account_id = $1`, f.dim.BillingAccountID)
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.ErrorIs(t, err, catchup.ErrFundingRefused)
	require.Equal(t, zero, f.counts(t))
}

// OP-1: both single-use tokens: after one command consumed its grant's
// and its funding decision's jti, a new command (the next generation's
// exposure) reusing the grant jti is refused, then one reusing the funding
// jti; nothing is written.
func TestOP1LateCommandJTIReplayRefused(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	first := f.openExposure(t)
	// A second positive difference (150) joins the same open generation 1.
	f.input(t, 3, "150")
	f.drain(t)
	latest := f.openExposure(t)
	require.EqualValues(t, 3, latest.SettlementStateRevision)
	require.EqualValues(t, 1, latest.Case.CaseGeneration)
	_, err := f.late.DecideFunding(t.Context(), f.command(t, first, "", nil).dec)
	require.ErrorIs(t, err, catchup.ErrExposureNotOpen, "a superseded exposure is not funded")

	cmd := f.command(t, latest, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	require.Equal(t, "50", fd.FundingAmount)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.NoError(t, err)
	before := f.counts(t)

	// A new difference after generation 1 resolved opens generation 2.
	f.input(t, 4, "170")
	f.drain(t)
	next := f.openExposure(t)
	require.EqualValues(t, 2, next.Case.CaseGeneration, "generation 1 is resolved: a new positive difference opens generation 2")
	replayGrant := f.command(t, next, "", func(c *reconciliation.LateGrantClaims) { c.JTI = cmd.claims.JTI })
	fd2, err := f.late.DecideFunding(t.Context(), replayGrant.dec)
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), replayGrant.with(fd2))
	require.ErrorIs(t, err, catchup.ErrJTIConsumed)
	require.Equal(t, before, f.counts(t))

	fresh := f.command(t, next, "", nil)
	replayFunding := *fd2
	replayFunding.JTI = fd.JTI
	_, err = reconciliation.SealAddressed(&replayFunding, "fd-")
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), fresh.with(&replayFunding))
	require.ErrorIs(t, err, catchup.ErrJTIConsumed)
	require.Equal(t, before, f.counts(t))

	_, err = f.late.ApplyLateSettlementCommand(t.Context(), fresh.with(fd2))
	require.NoError(t, err, "the generation's own command still commits")
}

func requireSQLState(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	var pg interface{ SQLState() string }
	require.True(t, errors.As(err, &pg), "%v", err)
	require.Equal(t, code, pg.SQLState(), "%v", err)
}

// BI-2 / BI-3 forgery as the oceanway_billing role (migration 00048): no
// direct ledger insert (42501); the controlled adjustment writer refuses a
// group no committed result names (BL006.late-adjustment-unfounded); a
// result off its fence's settled state or on an exposure that is not open
// in a resolving generation (BC015.late-result-off-fence); a result without
// its ledger group, fence move, exposure resolution, resolved generation
// and events (BC016.late-result-unproven); a resolved generation moved
// backwards (BC017.late-case-forward); the late facts are insert-only even
// for the owner (BC001.late-results-insert-only,
// BC001.exposure-resolutions-insert-only, BC001.funding-decisions-insert-only,
// BC001.late-grants-insert-only, BC001.late-funding-jtis-insert-only) and an
// exposure resolution is never deleted; a late fact event without its fact
// (BL009.late-event-unbacked).
func TestBI2LateCommandForgeriesRefused(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	e := f.openExposure(t)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	dimID, op := f.dim.SettlementDimensionID(), fd.CommandOperationID

	_, err = f.pool.Exec(t.Context(), `INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind,
		economic_identity, created_at) VALUES (gen_random_uuid(), $1, 'late_settlement_adjustment', '{"kind":"credits"}', now())`,
		f.dim.BillingReservationID)
	requireSQLState(t, err, pgerrcode.InsufficientPrivilege)
	_, err = f.pool.Exec(t.Context(), `SELECT billing.post_late_settlement_adjustment($1, gen_random_uuid())`, op)
	requireSQLState(t, err, billing.CodeLedgerUnjustified)

	forge := func(from int64, before string, finish bool) error {
		return pgx.BeginFunc(t.Context(), f.pool, func(tx pgx.Tx) error {
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO billing.late_consumed_grants VALUES ($1, $2, $3, now())`, []any{uuid.NewString(), cquad(op).Digest, op}},
				{`INSERT INTO billing.late_consumed_funding_jtis VALUES ($1, $2, now())`, []any{fd.JTI, op}},
				{`INSERT INTO billing.late_settlement_command_results (command_operation_id, settlement_dimension_id,
				    from_settlement_state_revision, to_settlement_state_revision, billing_reservation_id, billing_account_id,
				    late_settlement_exposure_id, case_generation, settled_amount_before, settled_amount_after, adjustment_amount, grant_jti,
				    funding_decision_jti, posting_group_id, result_ref, result_schema_version, result_digest_algorithm_version, result_digest,
				    result_body, event_id, event_envelope_sha256, committed_at)
				  SELECT $1, $2, $3::bigint, $3::bigint + 1, $4, $5, $6, 1, $7::numeric, $7::numeric + 30, 30, grant_jti, $8, gen_random_uuid(),
				    'lscres-forged', '1', 'jcs-sha256-v1', repeat('a', 64), '{}', gen_random_uuid(), repeat('b', 64), now()
				  FROM billing.late_consumed_grants WHERE command_operation_id = $1`,
					[]any{op, dimID, from, f.dim.BillingReservationID, f.dim.BillingAccountID, e.ExposureID(), before, fd.JTI}},
			} {
				if _, err := tx.Exec(t.Context(), q.sql, q.args...); err != nil {
					return err
				}
			}
			if finish {
				_, err := tx.Exec(t.Context(), `SET CONSTRAINTS ALL IMMEDIATE`)
				return err
			}
			return nil
		})
	}
	requireSQLState(t, forge(3, "100", false), catchup.CodeLateResultOffFence)
	requireSQLState(t, forge(2, "90", false), catchup.CodeLateResultOffFence)
	requireSQLState(t, forge(2, "100", true), catchup.CodeLateResultUnproven)
	require.Equal(t, lateCounts{}, f.counts(t))

	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.NoError(t, err)
	// An applied event without the fact that names it (BL009.late-event-unbacked).
	applied, _ := f.outboxEvent(t, envelope.BillingCaseResolutionAppliedV1)
	forged := *applied
	forged.EventID = uuid.Must(uuid.NewV7()).String()
	built, err := envelope.Build(forged)
	require.NoError(t, err)
	err = pgx.BeginFunc(t.Context(), f.pool, func(tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Core).AppendTx(t.Context(), tx, *built)
		return err
	})
	requireSQLState(t, err, billing.CodeFactEventUnbacked)

	_, err = f.pool.Exec(t.Context(), `UPDATE billing.late_settlement_cases SET state = 'open' WHERE settlement_dimension_id = $1`, dimID)
	requireSQLState(t, err, catchup.CodeLateCaseForward)
	_, err = f.pool.Exec(t.Context(), `UPDATE billing.late_settlement_cases SET state = 'resolving' WHERE settlement_dimension_id = $1`, dimID)
	requireSQLState(t, err, catchup.CodeLateCaseForward)
	_, err = f.pool.Exec(t.Context(), `DELETE FROM billing.late_settlement_exposure_resolutions`)
	requireSQLState(t, err, pgerrcode.InsufficientPrivilege)
	for _, table := range []string{"late_settlement_command_results", "late_settlement_exposure_resolutions", "funding_decisions",
		"late_consumed_grants", "late_consumed_funding_jtis"} {
		var column string
		require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT column_name FROM information_schema.columns
			WHERE table_schema = 'billing' AND table_name = $1 ORDER BY ordinal_position LIMIT 1`, table).Scan(&column))
		_, err := f.admin.Exec(t.Context(), "UPDATE billing."+table+" SET "+column+" = "+column)
		requireSQLState(t, err, catchup.CodeInsertOnly)
		_, err = f.admin.Exec(t.Context(), "DELETE FROM billing."+table)
		requireSQLState(t, err, catchup.CodeInsertOnly)
	}
}

// outboxEvent decodes the one outbox event of type eventType.
func (f *lateFixture) outboxEvent(t *testing.T, eventType string) (*envelope.Envelope, digest.Digest) {
	t.Helper()
	var raw string
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events WHERE event_type = $1`, eventType).Scan(&raw))
	ev, err := envelope.DecodeEnvelope([]byte(raw))
	require.NoError(t, err)
	d, err := ev.Digest()
	require.NoError(t, err)
	return ev, d
}

// OP-1 / BI-2: Billing's directed reads for the Operations projector answer
// found only for the exact result and applied fact the events name (event
// id and envelope digest included); any field the event states differently
// is conflicting; an unknown operation or exposure is not_found; a request
// without its quadruples is refused.
func TestOP1LateResultAndAppliedReadsForOperations(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	e := f.openExposure(t)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.NoError(t, err)
	reads := catchup.Reads{DB: f.pool}

	ev, d := f.outboxEvent(t, envelope.BillingLateCommandResultCommittedV1)
	p, err := envelope.PayloadOf[envelope.BillingLateSettlementCommandResultCommittedV1Payload](ev)
	require.NoError(t, err)
	rreq := coreread.LateCommandResultRead{EventID: ev.EventID, EventEnvelopeDigest: d, Result: p.LateSettlementCommandResult(),
		CommandOperationID: p.LateSettlementCommandOperationID, SettlementDimensionID: p.SettlementDimensionID,
		LateSettlementExposureID: p.LateSettlementExposureID, CaseRef: p.ReconciliationCaseRef, CaseGeneration: p.CaseGeneration,
		CaseIdentity: p.LateSettlementCaseIdentityReservation(), FromSettlementStateRevision: p.FromSettlementStateRevision,
		ToSettlementStateRevision: p.ToSettlementStateRevision, AdjustmentAmount: p.AdjustmentAmount, Actor: p.ActorWorkforcePrincipalID}
	ans, err := reads.ReadLateSettlementCommandResultForOperations(t.Context(), rreq)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	for name, edit := range map[string]func(*coreread.LateCommandResultRead){
		"another event":    func(r *coreread.LateCommandResultRead) { r.EventID = cid("other-event") },
		"another digest":   func(r *coreread.LateCommandResultRead) { r.EventEnvelopeDigest.Value = cquad("x").Digest },
		"another amount":   func(r *coreread.LateCommandResultRead) { r.AdjustmentAmount = "31" },
		"another revision": func(r *coreread.LateCommandResultRead) { r.ToSettlementStateRevision = 4 },
		"another actor":    func(r *coreread.LateCommandResultRead) { r.Actor = lateApprover },
		"another result":   func(r *coreread.LateCommandResultRead) { r.Result = cquad("lscres-other") },
		"another identity": func(r *coreread.LateCommandResultRead) { r.CaseIdentity = cquad("lcir-other") },
	} {
		r := rreq
		edit(&r)
		ans, err := reads.ReadLateSettlementCommandResultForOperations(t.Context(), r)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, ans, name)
	}
	unknown := rreq
	unknown.CommandOperationID = cid("no-such-operation")
	ans, err = reads.ReadLateSettlementCommandResultForOperations(t.Context(), unknown)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans, "another operation at a revision that has its result")
	unknown.FromSettlementStateRevision = 9
	ans, err = reads.ReadLateSettlementCommandResultForOperations(t.Context(), unknown)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
	bad := rreq
	bad.Result = strict.Quadruple{}
	_, err = reads.ReadLateSettlementCommandResultForOperations(t.Context(), bad)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)

	ev, d = f.outboxEvent(t, envelope.BillingCaseResolutionAppliedV1)
	ap, err := envelope.PayloadOf[envelope.BillingCaseResolutionAppliedV1Payload](ev)
	require.NoError(t, err)
	areq := coreread.CaseResolutionAppliedRead{EventID: ev.EventID, EventEnvelopeDigest: d, Applied: ap.BillingCaseResolutionApplied(),
		LateSettlementExposureID: ap.LateSettlementExposureID, SettlementDimensionID: ap.SettlementDimensionID, CaseRef: ap.ReconciliationCaseRef,
		CaseGeneration: ap.CaseGeneration, CaseIdentity: ap.LateSettlementCaseIdentityReservation(), ResolutionSource: ap.ResolutionSource,
		ResolutionOperationID: ap.ResolutionOperationID}
	ans, err = reads.ReadBillingCaseResolutionAppliedForOperations(t.Context(), areq)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	for name, edit := range map[string]func(*coreread.CaseResolutionAppliedRead){
		"another event": func(r *coreread.CaseResolutionAppliedRead) { r.EventID = cid("other-event") },
		"another source": func(r *coreread.CaseResolutionAppliedRead) {
			r.ResolutionSource = reconciliation.ResolutionSourceTransition
		},
		"another generation": func(r *coreread.CaseResolutionAppliedRead) { r.CaseGeneration = 2 },
		"another operation":  func(r *coreread.CaseResolutionAppliedRead) { r.ResolutionOperationID = cid("other-op") },
		"another applied":    func(r *coreread.CaseResolutionAppliedRead) { r.Applied = cquad("bcra-other") },
	} {
		r := areq
		edit(&r)
		ans, err := reads.ReadBillingCaseResolutionAppliedForOperations(t.Context(), r)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, ans, name)
	}
	none := areq
	none.LateSettlementExposureID = cid("no-such-exposure")
	ans, err = reads.ReadBillingCaseResolutionAppliedForOperations(t.Context(), none)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
}

// BI-2 (ADR-031; CheckCaseResolutionByTransition): a later transition
// resolves the dimension's open exposure in its own transaction: a new
// positive difference supersedes it (the new exposure stays the one open
// exposure), a refund makes it moot; each resolution is
// BillingCaseResolutionApplied@1 with source settlement_transition naming
// the transition and its to revision, with its event, which Billing's read
// for the projector finds. A superseded exposure is not funded.
func TestBI2LaterTransitionResolvesTheOpenExposure(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	first := f.openExposure(t)
	f.input(t, 3, "150")
	f.drain(t)
	second := f.openExposure(t)
	f.input(t, 4, "90")
	f.drain(t)
	require.Equal(t, []string{"1>2 late_settlement_exposure 30", "2>3 late_settlement_exposure 50", "3>4 refund 10"}, f.steps(t))

	transition := func(to int64) *billingc.BillingSettlementTransition {
		var body string
		require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT transition_body FROM billing.settlement_transitions
			WHERE settlement_dimension_id = $1 AND to_settlement_state_revision = $2`, f.dim.SettlementDimensionID(), to).Scan(&body))
		tr, err := billingc.DecodeBillingSettlementTransition([]byte(body))
		require.NoError(t, err)
		return tr
	}
	for _, c := range []struct {
		exposure *billingc.LateSettlementExposure
		to       int64
	}{{first, 3}, {second, 4}} {
		var body string
		var to int64
		require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT applied_body, transition_to_revision FROM billing.late_settlement_exposure_resolutions
			WHERE late_settlement_exposure_id = $1 AND resolution_source = 'settlement_transition'`, c.exposure.ExposureID()).Scan(&body, &to))
		require.Equal(t, c.to, to)
		a, err := reconciliation.DecodeCaseResolutionApplied([]byte(body))
		require.NoError(t, err)
		require.NoError(t, reconciliation.CheckCaseResolutionByTransition(a, c.exposure, transition(c.to)))
	}
	var open int
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.late_settlement_exposures e
		WHERE settlement_dimension_id = $1 AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions x
		  WHERE x.late_settlement_exposure_id = e.late_settlement_exposure_id)`, f.dim.SettlementDimensionID()).Scan(&open))
	require.Zero(t, open)

	var raw string
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events
		WHERE event_type = 'billing.case-resolution.applied@1' AND aggregate_id = $1`, first.ExposureID()).Scan(&raw))
	ev, err := envelope.DecodeEnvelope([]byte(raw))
	require.NoError(t, err)
	d, err := ev.Digest()
	require.NoError(t, err)
	ap, err := envelope.PayloadOf[envelope.BillingCaseResolutionAppliedV1Payload](ev)
	require.NoError(t, err)
	require.Equal(t, reconciliation.ResolutionSourceTransition, ap.ResolutionSource)
	ans, err := catchup.Reads{DB: f.pool}.ReadBillingCaseResolutionAppliedForOperations(t.Context(), coreread.CaseResolutionAppliedRead{
		EventID: ev.EventID, EventEnvelopeDigest: d, Applied: ap.BillingCaseResolutionApplied(), LateSettlementExposureID: ap.LateSettlementExposureID,
		SettlementDimensionID: ap.SettlementDimensionID, CaseRef: ap.ReconciliationCaseRef, CaseGeneration: ap.CaseGeneration,
		CaseIdentity: ap.LateSettlementCaseIdentityReservation(), ResolutionSource: ap.ResolutionSource, ResolutionOperationID: ap.ResolutionOperationID})
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)

	_, err = f.late.DecideFunding(t.Context(), f.command(t, second, "", nil).dec)
	require.ErrorIs(t, err, catchup.ErrExposureNotOpen, "a moot exposure is not funded")
}

// BI-3 (ADR-031 F → T → Late Result → T): a late command that commits
// while a catch-up worker attempt is in flight supersedes it: the command
// moves the fence (state revision, settled amount) with a successor Work
// generation, the attempt's relock sees the moved fence and writes nothing,
// and the next attempt verifies from the late result's revision.
func TestBI3LateCommandSupersedesAnInFlightCatchUpAttempt(t *testing.T) {
	t.Parallel()
	f := setupLateFixture(t)
	_, err := f.worker.RunOnce(t.Context()) // the exposure transition 1>2, its successor Work pending
	require.NoError(t, err)
	st := f.fence(t)
	require.EqualValues(t, 2, st.StateRevision)
	require.Equal(t, "pending_verification", st.State)
	e := f.openExposure(t)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)

	var once sync.Once
	var lateErr error
	f.metering.beforeValidate = func(req catchup.ValidationRequest) {
		if req.Purpose == catchup.PurposeBillingCatchUpFence {
			once.Do(func() { _, lateErr = f.late.ApplyLateSettlementCommand(context.Background(), cmd.with(fd)) })
		}
	}
	steps, err := f.worker.RunOnce(t.Context())
	require.NoError(t, err)
	require.NoError(t, lateErr)
	require.Equal(t, 1, steps[catchup.StepSuperseded], "%v", steps)
	f.metering.beforeValidate = nil
	f.drain(t)
	st = f.fence(t)
	require.EqualValues(t, 3, st.StateRevision)
	require.Equal(t, "130", st.Settled)
	require.Equal(t, "caught_up", st.State)
	require.Equal(t, []string{"1>2 late_settlement_exposure 30", "2>3 late_result 30"}, f.steps(t))
	var finished int
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.settlement_catch_up_finishes
		WHERE settlement_dimension_id = $1 AND work_generation = 2`, f.dim.SettlementDimensionID()).Scan(&finished))
	require.Zero(t, finished, "the superseded generation wrote nothing")
}

// OP-1: the late grant is Core's, strict, current and exactly the
// command's: a grant signed by another key, of another issuer, expired, or
// binding another decision is ErrLateGrant, and nothing is written.
func TestOP1LateGrantRefusals(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	e := f.openExposure(t)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)

	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	otherVerifier, err := catchup.NewLateGrantVerifier(lateIssuer, other.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	wrongKey := &catchup.LateCommands{Pool: f.pool, Grants: otherVerifier, Metering: f.metering, Now: f.late.Now}
	_, err = wrongKey.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.ErrorIs(t, err, catchup.ErrLateGrant)

	issuer := f.command(t, e, "", func(c *reconciliation.LateGrantClaims) { c.Issuer = "core.someone-else" })
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), catchup.LateSettlementCommand{Grant: issuer.jws, Candidate: cmd.cand, Decision: cmd.dec, Funding: fd})
	require.ErrorIs(t, err, catchup.ErrLateGrant)

	expired := cmd.with(fd)
	expired.Now = cmd.claims.ExpiresAt
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), expired)
	require.ErrorIs(t, err, catchup.ErrLateGrant)

	another := f.command(t, e, "another", nil)
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), catchup.LateSettlementCommand{Grant: another.jws, Candidate: cmd.cand, Decision: cmd.dec, Funding: fd})
	require.ErrorIs(t, err, catchup.ErrLateGrant)
	require.Equal(t, lateCounts{}, f.counts(t))
}

// BI-2, OBS-1 (issue 32): the open-exposure gauge's statement counts an
// exposure while it is open and stops counting it once the late settlement
// command resolved it (it reads the unresolved case generations, never the
// resolved history; the plan test in internal/billing checks the index).
func TestBI2OpenExposureGaugeCountsOnlyUnresolved(t *testing.T) {
	t.Parallel()
	f := setupLateCommand(t)
	stmt, err := os.ReadFile("../sql/metrics_exposures.sql")
	require.NoError(t, err)
	open := func() (n, amount float64) {
		var age float64
		require.NoError(t, f.admin.QueryRow(t.Context(), string(stmt)).Scan(&n, &amount, &age))
		return n, amount
	}
	e := f.openExposure(t)
	n, amount := open()
	require.Equal(t, 1.0, n)
	require.Equal(t, 30.0, amount)
	cmd := f.command(t, e, "", nil)
	fd, err := f.late.DecideFunding(t.Context(), cmd.dec)
	require.NoError(t, err)
	n, _ = open()
	require.Equal(t, 1.0, n, "resolving: still open until the command commits")
	_, err = f.late.ApplyLateSettlementCommand(t.Context(), cmd.with(fd))
	require.NoError(t, err)
	n, amount = open()
	require.Zero(t, n)
	require.Zero(t, amount)
}
