package finalization_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/finalization"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// forge runs f in one transaction as role (SET LOCAL ROLE on the owner's
// pool) and returns the SQLSTATE of the first failure, at COMMIT included.
func forge(t *testing.T, k *core, role string, f func(ctx context.Context, tx pgx.Tx) error) string {
	t.Helper()
	err := db.WithTx(t.Context(), k.admin, func(ctx context.Context, tx pgx.Tx) error {
		if role != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
		}
		return f(ctx, tx)
	})
	require.Error(t, err, "the forged write committed")
	return db.SQLState(err)
}

func exec(stmts ...string) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
}

// waitingCore is a reservation the real pipeline left waiting for
// reconciliation (target above the reservation): reserved, its fence
// awaiting_finalization, its decision reconciliation_required.
func waitingCore(t *testing.T) (*core, string) {
	t.Helper()
	k := newCore(t)
	w := newWorld("1000000", "200000")
	closedWorld(t, k, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, contract.DecisionReconciliationRequired, r.Decision.Outcome)
	return k, w.closure.BillingReservationID
}

// committedCore is a reservation the real pipeline finalized.
func committedCore(t *testing.T) (*core, string) {
	t.Helper()
	k := newCore(t)
	w := newWorld("1200", "333")
	closedWorld(t, k, w)
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{}, finalization.Config{}, nil)
	r, err := wk.ProcessOne(t.Context())
	require.NoError(t, err)
	require.Equal(t, contract.DecisionSettleAndReleaseRemainder, r.Decision.Outcome)
	return k, w.closure.BillingReservationID
}

// Issue 30, classes 1–3 (BI-1: only the committed success writes ledger and
// terminal state, atomically with its fact): forged as oceanway_billing on a
// reservation the real pipeline left waiting for reconciliation.
func TestBI1ForgedFinalizationOfAWaitingReservationIsRefused(t *testing.T) {
	t.Parallel()
	k, reservation := waitingCore(t)
	res := "'" + reservation + "'"
	postFinalization := "SELECT billing.post_finalization(" + res + ", gen_random_uuid(), 100, 1400, now())"

	// Class 1: a balanced finalization group with no committed fact. The
	// role cannot write ledger rows (42501); through the controlled writer
	// the group fails its proof at commit (BL006).
	require.Equal(t, pgerrcode.InsufficientPrivilege, forge(t, k, billingschema.RoleBilling, exec(
		"INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at) "+
			"VALUES (gen_random_uuid(), "+res+", 'finalization', '{\"kind\":\"credits\"}', now())")))
	require.Equal(t, billing.CodeLedgerUnjustified, forge(t, k, billingschema.RoleBilling, exec(postFinalization)))

	// Class 2: a committed fact bound to a group that is not its finalization
	// group (the reservation's hold), the reservation still reserved (BL007).
	committedCopy := `INSERT INTO billing.finalization_committed (committed_ref, committed_schema_version, committed_digest_algorithm_version,
		    committed_digest, billing_reservation_id, billing_finalization_fence_id, work_generation, billing_finalization_operation_id,
		    finalization_fence_revision, decision, reserved_amount, settled_amount, released_amount, posting_group_id, event_id,
		    event_envelope_sha256, committed_body, committed_at)
		SELECT 'bfc-forged', '1', 'jcs-sha256-v1', repeat('a', 64), f.billing_reservation_id, f.billing_finalization_fence_id,
		       f.latest_work_generation, w.billing_finalization_operation_id, f.finalization_fence_revision + 1, 'settle_and_release_remainder',
		       1500, 100, 1400, %s, gen_random_uuid(), repeat('b', 64),
		       '{"billingFinalizationDecisionRef":"' || (SELECT decision_ref FROM billing.finalization_decisions LIMIT 1) || '"}', now()
		  FROM billing.billing_finalization_fences f
		  JOIN billing.billing_finalization_works w ON w.billing_finalization_fence_id = f.billing_finalization_fence_id
		   AND w.work_generation = f.latest_work_generation`
	holdGroup := "(SELECT posting_group_id FROM billing.ledger_posting_groups WHERE group_kind = 'reservation_hold')"
	require.Equal(t, billing.CodeCommittedUnproven, forge(t, k, billingschema.RoleBilling, exec(fmt.Sprintf(committedCopy, holdGroup))))

	// Class 3: the whole finalization — postings, committed fact, reservation
	// settled — on the waiting fence, with no Work, bundle or success
	// decision behind it: every piece alone is well formed, together they
	// do not commit (BL007: the fence is not committed with it).
	group := "(SELECT posting_group_id FROM billing.ledger_posting_groups WHERE group_kind = 'finalization')"
	require.Equal(t, billing.CodeCommittedUnproven, forge(t, k, billingschema.RoleBilling, exec(
		postFinalization,
		fmt.Sprintf(committedCopy, group),
		"UPDATE billing.reservation_states SET state = 'settled', settled_amount = 100, released_amount = 1400, committed_ref = 'bfc-forged', "+
			"finalized_at = now() WHERE billing_reservation_id = "+res)))

	// Nothing of it stayed.
	var groups, facts int
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM billing.ledger_posting_groups WHERE group_kind = 'finalization'),
		(SELECT count(*) FROM billing.finalization_committed)`).Scan(&groups, &facts))
	require.Zero(t, groups+facts)
}

// Issue 30, classes 4, 8 and 9 (ADR-031: success is absorbing, one event
// per fact; admission writes holds only): forged on a reservation the real
// pipeline finalized.
func TestBI2ForgedWritesAfterTheSuccessAreRefused(t *testing.T) {
	t.Parallel()
	k, reservation := committedCore(t)
	res := "'" + reservation + "'"

	// Class 4: a second success decision for the committed fence (BL008,
	// clause BL008.decision-after-success).
	require.Equal(t, billing.CodeDecisionAfterSuccess, forge(t, k, billingschema.RoleBilling, exec(`
		INSERT INTO billing.finalization_decisions (decision_ref, decision_schema_version, decision_digest_algorithm_version,
		       decision_digest, billing_finalization_fence_id, manifest_ref, bundle_ref, decision, reason_code, reserved_amount,
		       settled_amount, released_amount, decision_body)
		SELECT decision_ref || '-again', decision_schema_version, decision_digest_algorithm_version, repeat('c', 64),
		       billing_finalization_fence_id, manifest_ref, bundle_ref, decision, reason_code, reserved_amount, settled_amount - 1,
		       released_amount + 1, decision_body
		  FROM billing.finalization_decisions`)))

	// Class 8: a second billing.finalization.committed@1 for the finalized
	// reservation, appended through the real producer path with a valid
	// digest and its deliveries: no committed fact names it (BL009, clause
	// BL009.fact-event-unbacked).
	var body string
	require.NoError(t, k.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events
		WHERE event_type = 'billing.finalization.committed@1'`).Scan(&body))
	ev, err := envelope.DecodeEnvelope([]byte(body))
	require.NoError(t, err)
	second := *ev
	second.EventID = outbox.NewEventID()
	rebuilt, err := envelope.Build(second)
	require.NoError(t, err)
	require.Equal(t, billing.CodeFactEventUnbacked, forge(t, k, billingschema.RoleBilling, func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, *rebuilt)
		return err
	}))

	// Class 9: oceanway_admission charging 50 to the settled reservation:
	// no INSERT grant on the ledger (42501); its one controlled writer posts
	// a hold of a reserved reservation only (BL006); the finalization writer
	// is not its to call (42501).
	for stmt, code := range map[string]string{
		`INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
		   account_kind, direction, amount, posted_at)
		 SELECT posting_group_id, 9, billing_reservation_id, billing_account_id, economic_identity, 'customer_wallet', 'debit', 50, now()
		   FROM billing.ledger_postings WHERE billing_reservation_id = ` + res + ` LIMIT 1`: pgerrcode.InsufficientPrivilege,
		"SELECT billing.post_reservation_hold(" + res + ", gen_random_uuid(), now())":    billing.CodeLedgerUnjustified,
		"SELECT billing.post_finalization(" + res + ", gen_random_uuid(), 50, 0, now())": pgerrcode.InsufficientPrivilege,
		"SELECT billing.post_settlement_transition('bst-any', gen_random_uuid())":        pgerrcode.InsufficientPrivilege,
	} {
		require.Equal(t, code, forge(t, k, "oceanway_admission", exec(stmt)), stmt)
	}

	// The same line added to the finalization group by the table owner
	// breaks the group's proof (BL006); the owner cannot TRUNCATE the
	// ledger (BL001).
	require.Equal(t, billing.CodeLedgerUnjustified, forge(t, k, "", exec(`
		INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
		  account_kind, direction, amount, posted_at)
		SELECT p.posting_group_id, 9, p.billing_reservation_id, p.billing_account_id, p.economic_identity, 'customer_wallet', 'debit', 50, now()
		  FROM billing.ledger_postings p JOIN billing.ledger_posting_groups g USING (posting_group_id)
		 WHERE g.group_kind = 'finalization' LIMIT 1`,
		`INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
		  account_kind, direction, amount, posted_at)
		SELECT p.posting_group_id, 10, p.billing_reservation_id, p.billing_account_id, p.economic_identity, 'settled_revenue', 'credit', 50, now()
		  FROM billing.ledger_postings p JOIN billing.ledger_posting_groups g USING (posting_group_id)
		 WHERE g.group_kind = 'finalization' LIMIT 1`)))
	for _, table := range []string{"billing.ledger_postings", "billing.ledger_posting_groups", "billing.finalization_committed",
		"billing.reservation_states", "billing.finalization_decisions"} {
		require.Equal(t, billing.CodeInsertOnly, forge(t, k, "", exec("TRUNCATE "+table+" CASCADE")), table)
	}
}

// Issue 30 (ADR-031: a fence commits only with its committed fact; the
// admission facts never change): a fence the real pipeline left pending is
// moved to committed with no fact (23503, the deferred foreign key); the
// table owner cannot edit or truncate admission's facts (AD001).
func TestBI1FenceCommitsOnlyWithItsFactAndAdmissionIsImmutable(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	closedWorld(t, k, newWorld("1200", "333"))
	require.Equal(t, pgerrcode.ForeignKeyViolation, forge(t, k, billingschema.RoleBilling, exec(`
		UPDATE billing.billing_finalization_fences SET finalization_fence_revision = finalization_fence_revision + 1,
		       coordination_state = 'committed', active_work_generation = NULL, committed_ref = 'bfc-none'`)))
	// Two different success decisions for the one pending fence: one
	// success per fence (23505).
	require.Equal(t, pgerrcode.UniqueViolation, forge(t, k, billingschema.RoleBilling, exec(`
		INSERT INTO billing.finalization_input_manifests (manifest_ref, manifest_schema_version, manifest_digest_algorithm_version,
		       manifest_digest, billing_finalization_fence_id, billing_reservation_id, dimension_count, target_total, manifest_body)
		SELECT 'fim-forged', '1', 'jcs-sha256-v1', repeat('d', 64), billing_finalization_fence_id, billing_reservation_id, 0, 0, '{}'
		  FROM billing.billing_finalization_fences`, `
		INSERT INTO billing.finalization_validation_bundles (bundle_ref, bundle_schema_version, bundle_digest_algorithm_version,
		       bundle_digest, manifest_ref, bundle_body)
		VALUES ('fvb-forged', '1', 'jcs-sha256-v1', repeat('e', 64), 'fim-forged', '{}')`, `
		INSERT INTO billing.finalization_decisions (decision_ref, decision_schema_version, decision_digest_algorithm_version,
		       decision_digest, billing_finalization_fence_id, manifest_ref, bundle_ref, decision, reserved_amount, settled_amount,
		       released_amount, decision_body)
		SELECT 'bfd-forged-' || n, '1', 'jcs-sha256-v1', repeat(n::text, 64), f.billing_finalization_fence_id, 'fim-forged',
		       'fvb-forged', 'settle_and_release_remainder', r.reserved_amount, n, r.reserved_amount - n, '{}'
		  FROM billing.billing_finalization_fences f JOIN billing.reservation_states r USING (billing_reservation_id),
		       generate_series(1, 2) n`)))
	for _, stmt := range []string{"UPDATE admission.reservations SET reserved_credits = 1", "DELETE FROM admission.runs",
		"TRUNCATE admission.runs CASCADE", "TRUNCATE admission.reservations CASCADE", "TRUNCATE admission.admission_requests CASCADE",
		"TRUNCATE admission.run_admission_manifests CASCADE"} {
		require.Equal(t, admission.CodeImmutable, forge(t, k, "", exec(stmt)), stmt)
	}
}

// Issue 30, class 4 under a real race (ADR-031: no decision follows the
// success): while the worker's finalization transaction holds its fence,
// a second session as oceanway_billing inserts a blocked decision for the
// same fence. The decision guard reads the fence FOR SHARE, so it waits
// for the commit and then refuses (BL008) instead of passing on the
// fence's old, uncommitted state.
func TestBI2DecisionRacingTheSuccessIsRefused(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	w := newWorld("1200", "333")
	closedWorld(t, k, w)
	// A manifest for the forged decision, committed before the race.
	_, err := k.pool.Exec(t.Context(), `INSERT INTO billing.finalization_input_manifests (manifest_ref, manifest_schema_version,
		    manifest_digest_algorithm_version, manifest_digest, billing_finalization_fence_id, billing_reservation_id, dimension_count,
		    target_total, manifest_body)
		SELECT 'fim-racer', '1', 'jcs-sha256-v1', repeat('f', 64), billing_finalization_fence_id, billing_reservation_id, 0, 0, '{}'
		  FROM billing.billing_finalization_fences`)
	require.NoError(t, err)

	atFence, release := make(chan struct{}), make(chan struct{})
	wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{Commit: billing.CommitOpts{
		AfterStep: func(_ context.Context, _ pgx.Tx, s string) error {
			if s == "fence" {
				close(atFence)
				<-release
			}
			return nil
		}}}, finalization.Config{}, nil)
	committed := make(chan error, 1)
	go func() {
		_, err := wk.ProcessOne(context.Background())
		committed <- err
	}()
	<-atFence

	racer, err := k.admin.Acquire(t.Context())
	require.NoError(t, err)
	defer racer.Release()
	var pid int
	require.NoError(t, racer.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid))
	refused := make(chan string, 1)
	go func() {
		err := pgx.BeginFunc(context.Background(), racer, func(tx pgx.Tx) error {
			if _, err := tx.Exec(context.Background(), "SET LOCAL ROLE "+billingschema.RoleBilling); err != nil {
				return err
			}
			_, err := tx.Exec(context.Background(), `INSERT INTO billing.finalization_decisions (decision_ref, decision_schema_version,
				    decision_digest_algorithm_version, decision_digest, billing_finalization_fence_id, manifest_ref, decision, reason_code,
				    reserved_amount, decision_body)
				SELECT 'bfd-racer', '1', 'jcs-sha256-v1', repeat('9', 64), billing_finalization_fence_id, 'fim-racer', 'blocked',
				       'inputs_not_closed', 1500, '{}'
				  FROM billing.billing_finalization_fences`)
			return err
		})
		refused <- db.SQLState(err)
	}()
	// The racer is waiting on the fence's lock before the worker commits.
	require.Eventually(t, func() bool {
		var waiting bool
		err := k.admin.QueryRow(t.Context(), `SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond)
	close(release)
	require.NoError(t, <-committed)
	require.Equal(t, billing.CodeDecisionAfterSuccess, <-refused) // clause BL008.decision-after-success
}
