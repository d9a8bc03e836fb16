package catchup_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
)

// caughtUpLedger is a reservation the real code finalized (settled 200 on
// two dimensions) and caught up: dimension refund went 100 → 80 (a refund
// transition posted on the ledger), dimension exposure went 100 → 130 (an
// open, blocked late settlement exposure); both fences caught_up, their
// last attempts finished.
func caughtUpLedger(t *testing.T) (b *bundle, refund, exposure billingc.SettlementDimension) {
	t.Helper()
	b = setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	dim := func(key string) billingc.SettlementDimension {
		return billingc.SettlementDimension{BillingReservationID: r.reservationID, BillingAccountID: r.accountID, RunID: r.runID,
			RunStepID: id("step", r.n), ExecutionAttemptID: id("attempt", r.n), ChargeDimensionKey: key,
			EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
	}
	refund, exposure = dim("tokens.output"), dim("tokens.input")
	d := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "200", "2300")
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
			Dimensions: []catchup.OpenDimension{
				{Dimension: refund, SettledInput: settlementInputOf(refund, 1), SettledAmount: "100"},
				{Dimension: exposure, SettledInput: settlementInputOf(exposure, 1), SettledAmount: "100"},
			},
		})
	})
	require.NoError(t, err)
	metering := newFakeMetering()
	metering.append(refund, 1, "100")
	metering.append(refund, 2, "80")
	metering.append(exposure, 1, "100")
	metering.append(exposure, 2, "130")
	consumer, err := catchup.NewConsumer(b.pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second},
		Finalization: catchup.FinalizationFenceObserver{}})
	require.NoError(t, err)
	for _, d := range []billingc.SettlementDimension{refund, exposure} {
		_, err := consumer.Consume(t.Context(), catchUpDelivery(inputEvent(d, 2)))
		require.NoError(t, err)
	}
	worker, err := catchup.NewWorker(b.pool, catchup.WorkerConfig{Metering: metering, Ledger: catchup.TransitionPostings{}})
	require.NoError(t, err)
	for range 10 {
		steps, err := worker.RunOnce(t.Context())
		require.NoError(t, err)
		if len(steps) == 0 {
			break
		}
	}
	var kinds []string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT array_agg(t.transition_kind || ':' || f.coordination_state ORDER BY t.transition_kind)
		FROM billing.settlement_transitions t JOIN billing.settlement_catch_up_fences f USING (settlement_dimension_id)`).Scan(&kinds))
	require.Equal(t, []string{"late_settlement_exposure:caught_up", "refund:caught_up"}, kinds, "the real code built the state")
	return b, refund, exposure
}

// forgeAs runs stmts in one transaction as role ("" = the table owner) and
// returns the SQLSTATE of the first failure, at COMMIT included.
func forgeAs(t *testing.T, b *bundle, role string, prepare func(ctx context.Context, tx pgx.Tx) error, stmts ...string) string {
	t.Helper()
	err := db.WithTx(t.Context(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
		if prepare != nil {
			if err := prepare(ctx, tx); err != nil {
				return err
			}
		}
		if role != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	require.Error(t, err, "the forged write committed: %v", stmts)
	return db.SQLState(err)
}

func disable(triggers ...string) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, tr := range triggers {
			if _, err := tx.Exec(ctx, tr); err != nil {
				return err
			}
		}
		return nil
	}
}

// Issue 30, classes 5–7 (BI-2: post-finality changes are append-only
// transitions; only a refund posts automatically, reconcile_before_charge),
// forged as oceanway_billing on state the real catch-up built.
func TestBI2ForgedCatchUpAndTransitionLedgerWritesAreRefused(t *testing.T) {
	t.Parallel()
	b, refund, exposure := caughtUpLedger(t)
	role := billingschema.RoleBilling
	refundDim, exposureDim := "'"+refund.SettlementDimensionID()+"'", "'"+exposure.SettlementDimensionID()+"'"
	finishedToken := `(SELECT fencing_token FROM billing.settlement_catch_up_attempts WHERE settlement_dimension_id = ` + refundDim + `
		ORDER BY work_generation DESC, attempt_number DESC LIMIT 1)`

	// Class 5: the caught-up fence's settled amount lowered to 0, written
	// with the token of the attempt that already finished (BC008,
	// clause BC008.token-finished).
	lower := `UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1, settled_amount = 0,
		attempt_fencing_token = ` + finishedToken + ` WHERE settlement_dimension_id = ` + refundDim
	require.Equal(t, catchup.CodeAttemptFinished, forgeAs(t, b, role, nil, lower))
	// With the token guard switched off by the table owner, the settled
	// amount still moves only with its transition (BC009,
	// clause BC009.settled-without-transition).
	require.Equal(t, catchup.CodeSettledWithoutTransition, forgeAs(t, b, "",
		disable("ALTER TABLE billing.settlement_catch_up_fences DISABLE TRIGGER settlement_catch_up_fences_token"), lower))

	// Class 6: a settlement_transition group charging the open, blocked
	// exposure: the role has no INSERT on the ledger (42501) and the
	// controlled writer posts refunds only (BL006).
	exposureRef := `(SELECT transition_ref FROM billing.settlement_transitions WHERE settlement_dimension_id = ` + exposureDim + `)`
	require.Equal(t, billing.CodeLedgerUnjustified, forgeAs(t, b, role, nil,
		`SELECT billing.post_settlement_transition(`+exposureRef+`, gen_random_uuid())`))
	require.Equal(t, pgerrcode.InsufficientPrivilege, forgeAs(t, b, role, nil,
		`INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at,
		   settlement_transition_ref)
		 SELECT gen_random_uuid(), billing_reservation_id, 'settlement_transition', '{"kind":"credits"}', now(), transition_ref
		   FROM billing.settlement_transitions WHERE settlement_dimension_id = `+exposureDim))
	// Even the table owner's own group on the exposure fails its proof.
	require.Equal(t, billing.CodeLedgerUnjustified, forgeAs(t, b, "", nil,
		`INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at,
		   settlement_transition_ref)
		 SELECT '00000000-0000-4000-8000-0000000000e1', billing_reservation_id, 'settlement_transition', '{"kind":"credits"}', now(), transition_ref
		   FROM billing.settlement_transitions WHERE settlement_dimension_id = `+exposureDim,
		`INSERT INTO billing.ledger_postings SELECT '00000000-0000-4000-8000-0000000000e1', n, billing_reservation_id, billing_account_id,
		   '{"kind":"credits"}', a, d, transition_amount, now()
		   FROM billing.settlement_transitions, (VALUES (1, 'settled_revenue', 'debit'), (2, 'customer_wallet', 'credit')) l (n, a, d)
		  WHERE settlement_dimension_id = `+exposureDim))

	// Class 7: a refund-shaped group with no transition behind it: the
	// writer finds none (BL006); the owner's group without one breaks the
	// table's rule (23514).
	require.Equal(t, billing.CodeLedgerUnjustified, forgeAs(t, b, role, nil,
		`SELECT billing.post_settlement_transition('bst-none', gen_random_uuid())`))
	require.Equal(t, pgerrcode.CheckViolation, forgeAs(t, b, "", nil,
		`INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at)
		 SELECT gen_random_uuid(), billing_reservation_id, 'settlement_transition', '{"kind":"credits"}', now()
		   FROM billing.settlement_transitions WHERE settlement_dimension_id = `+refundDim))

	// BL010: a second refund larger than what is left settled. The
	// transition guard (BC010) refuses it as the role; with that guard off,
	// the ledger still refuses the negative revenue balance at commit
	// (clauses BC010.transition-off-fence, BL010.negative-balance).
	secondRefund := `INSERT INTO billing.settlement_transitions (settlement_dimension_id, from_settlement_state_revision,
		  to_settlement_state_revision, billing_reservation_id, billing_account_id, transition_ref, transition_schema_version,
		  transition_digest_algorithm_version, transition_digest, transition_kind, settled_amount_before, settled_amount_after,
		  transition_amount, settlement_input_state_version, validation_operation_id, work_generation, event_id, event_envelope_sha256,
		  transition_body, committed_at)
		SELECT settlement_dimension_id, to_settlement_state_revision, to_settlement_state_revision + 1, billing_reservation_id,
		  billing_account_id, 'bst-forged', transition_schema_version, transition_digest_algorithm_version, transition_digest, 'refund',
		  500, 0, 500, settlement_input_state_version + 1, gen_random_uuid(),
		  (SELECT active_work_generation FROM billing.settlement_catch_up_fences WHERE settlement_dimension_id = ` + refundDim + `),
		  gen_random_uuid(), event_envelope_sha256, transition_body, committed_at
		  FROM billing.settlement_transitions WHERE settlement_dimension_id = ` + refundDim
	post := `SELECT billing.post_settlement_transition('bst-forged', gen_random_uuid())`
	require.Equal(t, catchup.CodeTransitionOffFence, forgeAs(t, b, role, nil, secondRefund, post))
	require.Equal(t, billing.CodeNegativeBalance, forgeAs(t, b, role,
		disable("ALTER TABLE billing.settlement_transitions DISABLE TRIGGER settlement_transitions_from_fence",
			"ALTER TABLE billing.settlement_transitions DISABLE TRIGGER settlement_transitions_proven"), secondRefund, post))

	// A refund transition that starts right where the exposure's fence
	// stands (BC010 lets it in), posted through the controlled writer, but
	// with no fence move (no token spent) and no event: refused at commit
	// (BC011, clause BC011.transition-unproven), so no refund reaches the
	// ledger without its catch-up step.
	lonelyRefund := `INSERT INTO billing.settlement_transitions (settlement_dimension_id, from_settlement_state_revision,
		  to_settlement_state_revision, billing_reservation_id, billing_account_id, transition_ref, transition_schema_version,
		  transition_digest_algorithm_version, transition_digest, transition_kind, settled_amount_before, settled_amount_after,
		  transition_amount, settlement_input_state_version, validation_operation_id, work_generation, event_id, event_envelope_sha256,
		  transition_body, committed_at)
		SELECT t.settlement_dimension_id, f.settlement_state_revision, f.settlement_state_revision + 1, t.billing_reservation_id,
		  t.billing_account_id, 'bst-lonely', t.transition_schema_version, t.transition_digest_algorithm_version, t.transition_digest,
		  'refund', f.settled_amount, 0, f.settled_amount, t.settlement_input_state_version + 1, gen_random_uuid(),
		  f.active_work_generation, gen_random_uuid(), t.event_envelope_sha256, t.transition_body, t.committed_at
		  FROM billing.settlement_transitions t JOIN billing.settlement_catch_up_fences f USING (settlement_dimension_id)
		 WHERE t.settlement_dimension_id = ` + exposureDim
	require.Equal(t, catchup.CodeTransitionUnproven, forgeAs(t, b, role, nil, lonelyRefund,
		`SELECT billing.post_settlement_transition('bst-lonely', gen_random_uuid())`))

	// Nothing of it stayed: the ledger is the real code's.
	bal := b.balances(t, refund.BillingReservationID)
	require.Equal(t, map[string]string{"reservation_hold": "0", "settled_revenue": "180", "customer_wallet": "180"}, bal)
}
