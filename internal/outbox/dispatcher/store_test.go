package dispatcher_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
)

const lease = 30 * time.Second

// OB-CLAIM-1: one claim leases a batch in claim order, sets owner, fresh
// token, fresh attempt id and attempt_count+1, and inserts the attempt start.
func TestClaim_OBCLAIM1_LeasesBatchInOrderAndStartsAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.appendRuns(t, 5)

	first := b.claim(t, "w1", 3, lease)
	require.Len(t, first, 3)
	seenTokens := map[string]bool{}
	for _, c := range first {
		require.Equal(t, 1, c.AttemptCount)
		require.False(t, seenTokens[c.LeaseToken], "fencing tokens never repeat")
		seenTokens[c.LeaseToken] = true
		require.Equal(t, "operations_projector", c.Member.ConsumerName)
		require.Equal(t, "OperationsProjectionAppliedReceipt", c.Member.ExpectedReceiptType)
		require.True(t, c.Member.ProjectionTarget.Required)
		require.Equal(t, projectionName, c.Member.ProjectionTarget.Name)
		require.NotEmpty(t, c.Envelope)
		var owner, token, attempt string
		require.NoError(t, b.producer.QueryRow(t.Context(), `
			SELECT d.lease_owner, d.lease_token::text, s.attempt_id::text FROM outbox.outbox_deliveries d
			JOIN outbox.outbox_delivery_attempt_starts s ON s.attempt_id = d.current_attempt_id
			WHERE d.event_id = $1 AND d.status = 'leased' AND s.lease_token = d.lease_token`, c.EventID).Scan(&owner, &token, &attempt))
		require.Equal(t, "w1", owner)
		require.Equal(t, c.LeaseToken, token)
		require.Equal(t, c.AttemptID, attempt)
	}
	// All five were appended in one transaction (same created_at); the
	// claim order falls back to event_id, which is what we check.
	claimedIDs := []string{first[0].EventID, first[1].EventID, first[2].EventID}
	require.IsIncreasing(t, claimedIDs)

	second := b.claim(t, "w2", 10, lease)
	require.Len(t, second, 2)
	require.Empty(t, b.claim(t, "w3", 10, lease), "leased deliveries are not eligible while their lease is valid")
	all := map[string]bool{}
	for _, c := range append(first, second...) {
		all[c.EventID] = true
	}
	for _, id := range ids {
		require.True(t, all[id])
	}
}

// OB-CLAIM-1 / OB-CLAIM-4: many concurrent claimers on real sessions never
// hold one delivery at the same time and none is lost.
func TestClaim_OBCLAIM1_ConcurrentClaimersNeverShareADelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 300
	b.appendRuns(t, n)

	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				claims, err := b.store.Claim(t.Context(), dispatcher.ClaimParams{Owner: "w", Limit: 7, Lease: lease})
				if err != nil {
					t.Error(err)
					return
				}
				if len(claims) == 0 {
					return
				}
				mu.Lock()
				for _, c := range claims {
					seen[c.EventID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, n, "every delivery claimed")
	for id, count := range seen {
		require.Equal(t, 1, count, "delivery %s claimed twice", id)
	}
}

// OB-DELIVER-5 / OB-PUB-1: the ack transaction appends the success finish,
// sets acknowledged, freezes the receipt quadruple and sets published_at.
func TestAck_OBDELIVER5_AcknowledgesAndPublishes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "w1", 1, lease)[0]
	res, err := b.consumer.Deliver(t.Context(), c.Delivery())
	require.NoError(t, err)
	require.NoError(t, b.store.VerifyAndAck(t.Context(), c, res))

	row := b.delivery(t, id)
	require.Equal(t, "acknowledged", row.Status)
	require.True(t, row.Published)
	require.NotNil(t, row.AckRef)
	require.Equal(t, res.Ack.AppliedReceipt.Receipt.Ref, *row.AckRef)
	require.Equal(t, []string{"acknowledged"}, b.finishes(t, id))

	// OB-DELIVER-7 duplicate ack: the same fence cannot ack twice.
	require.ErrorIs(t, b.store.VerifyAndAck(t.Context(), c, res), dispatcher.ErrLeaseLost)
	require.Equal(t, []string{"acknowledged"}, b.finishes(t, id))
	b.invariants(t)
}

// OB-CLAIM-2 / OB-CLAIM-3 / OB-DELIVER-7: after recovery and a re-claim, the
// stale worker can neither ack, retry, quarantine nor renew; nothing changes.
func TestFencing_OBCLAIM2_StaleWorkerCannotChangeTheDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	stale := b.claim(t, "old", 1, lease)[0]
	staleRes, err := b.consumer.Deliver(ctx, stale.Delivery())
	require.NoError(t, err)

	b.expireLease(t, id)
	recovered, err := b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Equal(t, 1, recovered["core_operations"])
	fresh := b.claim(t, "new", 1, lease)
	require.Len(t, fresh, 1)
	require.NotEqual(t, stale.LeaseToken, fresh[0].LeaseToken)
	require.NotEqual(t, stale.AttemptID, fresh[0].AttemptID)
	require.Equal(t, 2, fresh[0].AttemptCount)

	before := b.delivery(t, id)
	require.ErrorIs(t, b.store.VerifyAndAck(ctx, stale, staleRes), dispatcher.ErrLeaseLost)
	require.ErrorIs(t, b.store.Retry(ctx, stale.Fence, time.Second, "x"), dispatcher.ErrLeaseLost)
	require.ErrorIs(t, b.store.Quarantine(ctx, stale.Fence, "x", "late", false), dispatcher.ErrLeaseLost)
	require.ErrorIs(t, b.store.Renew(ctx, stale.Fence, lease), dispatcher.ErrLeaseLost)
	require.Equal(t, before, b.delivery(t, id), "a stale token never changes the delivery")
	require.Equal(t, []string{"lease_expired_unknown", ""}, b.finishes(t, id))

	// The new holder converges through the consumer's receipt.
	res, err := b.consumer.Deliver(ctx, fresh[0].Delivery())
	require.NoError(t, err)
	require.Equal(t, staleRes.ReceiptBody, res.ReceiptBody, "redelivery returns the first receipt")
	require.NoError(t, b.store.VerifyAndAck(ctx, fresh[0], res))
	require.Equal(t, []string{"lease_expired_unknown", "acknowledged"}, b.finishes(t, id))
	b.invariants(t)
}

// OB-CLAIM-3: recovery never touches a live lease, and a leased delivery
// whose expired attempt has not been recovered yet is not claimable.
func TestRecovery_OBCLAIM3_OnlyExpiredUnfinishedAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	b.claim(t, "w1", 1, lease)
	got, err := b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, got, "a live lease is not recovered")

	b.expireLease(t, id)
	// Expired but not yet recovered: still not claimable (its old attempt
	// has no finish).
	require.Empty(t, b.claim(t, "w2", 10, lease))
	got, err = b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Equal(t, 1, got["core_operations"])
	got, err = b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, got, "recovery finishes an attempt once")
	require.Len(t, b.claim(t, "w2", 10, lease), 1)
}

// OB-DELIVER-7 recoverer vs old worker: racing an ack against recovery at the
// lease boundary, on real concurrent sessions, always leaves exactly one
// finish per start and a consistent delivery.
func TestRecovery_OBDELIVER7_RecovererRacesOldWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	const rounds = 40
	ids := b.appendRuns(t, rounds)
	claims := b.claim(t, "old", rounds, 200*time.Millisecond)
	require.Len(t, claims, rounds)
	results := make([]transport.Result, rounds)
	for i, c := range claims {
		var err error
		results[i], err = b.consumer.Deliver(ctx, c.Delivery())
		require.NoError(t, err)
	}
	// Wait until the leases are about to run out in database time, then
	// race every ack against a recoverer.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var near bool
		require.NoError(c, b.producer.QueryRow(ctx, `SELECT min(lease_expires_at) - clock_timestamp() < interval '20 milliseconds' FROM outbox.outbox_deliveries WHERE status='leased'`).Scan(&near))
		require.True(c, near, "leases not near their end yet")
	}, 5*time.Second, pollTick, "lease boundary")
	var wg sync.WaitGroup
	ackErrs := make([]error, rounds)
	for i := range claims {
		wg.Add(1)
		go func(i int) { defer wg.Done(); ackErrs[i] = b.store.VerifyAndAck(ctx, claims[i], results[i]) }(i)
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 20; k++ {
				if _, err := b.store.RecoverExpired(ctx, nil, rounds); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Whatever interleaving happened: every ack either succeeded or lost its
	// lease, and the database agrees.
	acked := 0
	for _, err := range ackErrs {
		if err == nil {
			acked++
		}
	}
	t.Logf("race outcome: %d acked, %d lost to recovery", acked, rounds-acked)
	for i, id := range ids {
		row := b.delivery(t, id)
		fin := b.finishes(t, id)
		require.Len(t, fin, 1)
		switch ackErrs[i] {
		case nil:
			require.Equal(t, "acknowledged", row.Status)
			require.Equal(t, []string{"acknowledged"}, fin)
		default:
			require.ErrorIs(t, ackErrs[i], dispatcher.ErrLeaseLost)
			switch fin[0] {
			case "lease_expired_unknown":
				require.Equal(t, "pending", row.Status, "recovery returned it to pending")
			case "":
				require.Equal(t, "leased", row.Status, "expired, not yet recovered")
			default:
				t.Fatalf("unexpected finish %q", fin[0])
			}
		}
	}
	b.invariants(t)
}

// OB-DELIVER-6: the consumer committed, the dispatcher died before the ack;
// recovery, redelivery, same receipt, one effect, one acknowledgement.
func TestCrashWindow_OBDELIVER6_ConsumerCommittedDispatcherDiedBeforeAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "dies", 1, lease)[0]
	first, err := b.consumer.Deliver(ctx, c.Delivery())
	require.NoError(t, err)
	// ... the process dies here: no outcome is recorded.

	b.expireLease(t, id)
	_, err = b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	again := b.claim(t, "survivor", 1, lease)[0]
	second, err := b.consumer.Deliver(ctx, again.Delivery())
	require.NoError(t, err)
	require.Equal(t, first.ReceiptBody, second.ReceiptBody)
	require.Equal(t, first.Ack.AppliedReceipt.Receipt, second.Ack.AppliedReceipt.Receipt)
	require.NoError(t, b.store.VerifyAndAck(ctx, again, second))

	total, distinct := b.consumer.Effects(t)
	require.Equal(t, 1, total)
	require.Equal(t, 1, distinct)
	require.Equal(t, []string{"lease_expired_unknown", "acknowledged"}, b.finishes(t, id))
	b.invariants(t)
}

// OB-DELIVER-7: the dispatcher died after the claim and before calling the consumer.
func TestCrashWindow_OBDELIVER7_DiedBeforeConsumerCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	b.claim(t, "dies", 1, lease)
	b.expireLease(t, id)
	_, err := b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	c := b.claim(t, "survivor", 1, lease)[0]
	res, err := b.consumer.Deliver(ctx, c.Delivery())
	require.NoError(t, err)
	require.NoError(t, b.store.VerifyAndAck(ctx, c, res))
	require.Equal(t, int64(1), b.consumer.Calls())
	require.Equal(t, []string{"lease_expired_unknown", "acknowledged"}, b.finishes(t, id))
	b.invariants(t)
}

// OB-DELIVER-2: retry appends the finish, returns the delivery to pending and
// moves available_at by the backoff; it is not claimable before then.
func TestRetry_OBDELIVER2_BackToPendingWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "w", 1, lease)[0]
	require.NoError(t, b.store.Retry(ctx, c.Fence, time.Hour, "owner_unavailable"))
	row := b.delivery(t, id)
	require.Equal(t, "pending", row.Status)
	require.Equal(t, "owner_unavailable", *row.LastError)
	var future bool
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT available_at > now() + interval '59 minutes' FROM outbox.outbox_deliveries WHERE event_id=$1`, id).Scan(&future))
	require.True(t, future)
	require.Empty(t, b.claim(t, "w", 1, lease), "not claimable before available_at")
	_, err := b.producer.Exec(ctx, `UPDATE outbox.outbox_deliveries SET available_at = now() - interval '1 second' WHERE event_id=$1`, id)
	require.NoError(t, err)
	again := b.claim(t, "w", 1, lease)
	require.Len(t, again, 1)
	require.Equal(t, 2, again[0].AttemptCount)
	require.Equal(t, []string{"retryable", ""}, b.finishes(t, id))
}

// OB-DELIVER-2 / OB-STORE-5: quarantine finishes the attempt, sets the
// terminal state and writes the explicit quarantine row with the digest.
func TestQuarantine_OBSTORE5_ExplicitRowWithDigest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "w", 1, lease)[0]
	require.NoError(t, b.store.Quarantine(ctx, c.Fence, "unknown_pair", "consumer does not know the pair", false))
	row := b.delivery(t, id)
	require.Equal(t, "quarantined", row.Status)
	require.False(t, row.Published)
	var reason, sha string
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT reason, event_envelope_sha256 FROM outbox.outbox_quarantine WHERE event_id=$1`, id).Scan(&reason, &sha))
	require.Contains(t, reason, "unknown_pair")
	require.Equal(t, c.EnvelopeDigest.Value, sha)
	require.Equal(t, []string{"non_retryable"}, b.finishes(t, id))
	require.Empty(t, b.claim(t, "w", 1, lease), "quarantined is terminal")
	b.invariants(t)
}

// OB-DELIVER-4: an ack whose receipt names another projection version (a
// shadow receipt) is rejected, never accepted, and nothing is written.
func TestVerify_OBDELIVER4_ShadowProjectionReceiptRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "w", 1, lease)[0]
	b.consumer.ClaimProjectionVersion(2)
	res, err := b.consumer.Deliver(ctx, c.Delivery())
	require.NoError(t, err)
	err = b.store.VerifyAndAck(ctx, c, res)
	var rejected *dispatcher.AckRejectedError
	require.ErrorAs(t, err, &rejected)
	require.Equal(t, "ack_projection_target_mismatch", rejected.Code())
	require.ErrorIs(t, err, receipt.ErrProjectionTargetMismatch)
	retryable, code := transport.RetryableAndCode(err)
	require.False(t, retryable)
	require.Equal(t, "ack_projection_target_mismatch", code)
	b.untouched(t, id) // a rejected ack writes nothing
}

// OB-CLAIM-2: renewal extends a live lease and is itself fenced.
// Clause OB-CLAIM-2.delivery-renew-lease-lost: the renewal under a wrong
// lease token changes no row and answers ErrLeaseLost, never nil.
func TestRenew_OBCLAIM2_ExtendsLiveLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "w", 1, time.Second)[0]
	require.NoError(t, b.store.Renew(ctx, c.Fence, time.Hour))
	var far bool
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT lease_expires_at > now() + interval '59 minutes' FROM outbox.outbox_deliveries WHERE event_id=$1`, id).Scan(&far))
	require.True(t, far)
	wrong := c.Fence
	wrong.LeaseToken = "00000000-0000-4000-8000-000000000000"
	require.ErrorIs(t, b.store.Renew(ctx, wrong, time.Hour), dispatcher.ErrLeaseLost)
}

// OB-CLAIM-2: queued renewals share one round trip, which PostgreSQL runs as
// one implicit transaction. When a later renewal fails (here: the
// dispatcher role's session gives up waiting on a row lock, lock_timeout),
// the earlier ones are rolled back with it, so none of them may answer
// success: a caller would trust a lease that was never extended.
func TestRenewQueued_OBCLAIM2_FailedBatchAnswersNoSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.appendRuns(t, 3)
	claims := b.claim(t, "w", 3, time.Minute)
	locker, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(context.WithoutCancel(ctx)) }()
	last := claims[2].Fence
	_, err = locker.Exec(ctx, `SELECT 1 FROM outbox.outbox_deliveries WHERE event_id = $1 AND destination = $2 FOR UPDATE`,
		last.EventID, string(last.Destination))
	require.NoError(t, err)

	pool := dbtest.RolePoolWithParams(t, b.producerDSN, outboxschema.RoleDispatcher, map[string]string{"lock_timeout": "200ms"})
	store := dispatcher.NewStore(pool, 5*time.Second)
	fences := []dispatcher.Fence{claims[0].Fence, claims[1].Fence, last}
	errs := store.RenewQueued(ctx, fences, time.Hour)
	require.Equal(t, pgerrcode.LockNotAvailable, db.SQLState(errs[2]), "the locked row's renewal fails: %v", errs[2])
	for i, err := range errs {
		require.Error(t, err, "renewal %d answered success", i)
		require.NotErrorIs(t, err, dispatcher.ErrLeaseLost, "renewal %d: the fence still holds", i)
	}
	require.Zero(t, b.leasesRenewedForAnHour(t), "the rolled-back renewals extended nothing")
}

// OB-CLAIM-2: the queued renewals' round trip can also fail at its commit
// (here a deferred constraint trigger raises for every renewed row), after
// every statement succeeded: no renewal may answer success either.
func TestRenewQueued_OBCLAIM2_FailedCommitAnswersNoSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.appendRuns(t, 2)
	claims := b.claim(t, "w", 2, time.Minute)
	_, err := b.producer.Exec(ctx, `
		CREATE FUNCTION public.refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS
		  $$ BEGIN RAISE EXCEPTION 'injected: refused at commit'; END $$;
		CREATE CONSTRAINT TRIGGER refuse_long_leases AFTER UPDATE ON outbox.outbox_deliveries
		  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
		  WHEN (NEW.lease_expires_at > now() + interval '50 minutes')
		  EXECUTE FUNCTION public.refuse_at_commit()`)
	require.NoError(t, err)

	errs := b.store.RenewQueued(ctx, []dispatcher.Fence{claims[0].Fence, claims[1].Fence}, time.Hour)
	for i, err := range errs {
		require.ErrorContains(t, err, "refused at commit", "renewal %d", i)
	}
	require.Zero(t, b.leasesRenewedForAnHour(t), "the rolled-back renewals extended nothing")
}

// OB-CLAIM-2: queued renewals lock their rows in (event_id, destination)
// order whatever order they are asked in, the order of every batch
// statement, so the renewer's and a slot's renewals of overlapping rows
// cannot deadlock. Asked in reverse, with the later row locked elsewhere,
// the renewal already holds the earlier row while it waits.
func TestRenewQueued_OBCLAIM2_LocksRowsInKeyOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.appendRuns(t, 2)
	claims := b.claim(t, "w", 2, time.Minute)
	slices.SortFunc(claims, func(x, y dispatcher.Claimed) int {
		return cmp.Or(strings.Compare(x.EventID, y.EventID), strings.Compare(string(x.Destination), string(y.Destination)))
	})
	earlier, later := claims[0].Fence, claims[1].Fence
	locker, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(context.WithoutCancel(ctx)) }()
	_, err = locker.Exec(ctx, `SELECT 1 FROM outbox.outbox_deliveries WHERE event_id = $1 AND destination = $2 FOR UPDATE`,
		later.EventID, string(later.Destination))
	require.NoError(t, err)

	var errs []error
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		errs = b.store.RenewQueued(ctx, []dispatcher.Fence{later, earlier}, time.Hour)
	}()
	defer func() { _ = locker.Rollback(context.WithoutCancel(ctx)); <-renewed }()
	require.Eventually(t, func() bool {
		var n int
		_ = b.producer.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%DeliveryRenewQueued%'`).Scan(&n)
		return n > 0
	}, 10*time.Second, pollTick, "the renewal waits on the locked later row")
	probe, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	_, err = probe.Exec(ctx, `SELECT 1 FROM outbox.outbox_deliveries WHERE event_id = $1 AND destination = $2 FOR UPDATE NOWAIT`,
		earlier.EventID, string(earlier.Destination))
	require.NoError(t, probe.Rollback(ctx)) // before asserting: a probe that got the lock must not hold it
	require.Equal(t, pgerrcode.LockNotAvailable, db.SQLState(err), "the earlier row was renewed (and locked) first")

	require.NoError(t, locker.Rollback(ctx))
	<-renewed
	for i, err := range errs {
		require.NoError(t, err, "renewal %d", i)
	}
	require.Equal(t, 2, b.leasesRenewedForAnHour(t))
}

// leasesRenewedForAnHour counts the deliveries whose lease ends more than 59
// minutes from now (the renewal tests renew for an hour).
func (b *bundle) leasesRenewedForAnHour(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.producer.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_deliveries
		WHERE lease_expires_at > now() + interval '59 minutes'`).Scan(&n))
	return n
}

// Classification goes through error behaviour, never strings.
func TestTransport_ClassificationByBehaviour(t *testing.T) {
	t.Parallel()
	r, code := transport.RetryableAndCode(transport.NonRetryable("unknown_pair", errors.New("retry me please")))
	require.False(t, r)
	require.Equal(t, "unknown_pair", code)
	r, code = transport.RetryableAndCode(errors.New("non_retryable: looks final"))
	require.True(t, r, "unclassified errors are retryable")
	require.Equal(t, "unclassified", code)
	r, _ = transport.RetryableAndCode(context.DeadlineExceeded)
	require.True(t, r)

	panicking := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{
		route.CoreOperations: func(context.Context, transport.Delivery) (transport.Result, error) { panic("boom") },
	})
	_, err := panicking.Deliver(t.Context(), transport.Delivery{Member: route.Member{Destination: route.CoreOperations}})
	r, code = transport.RetryableAndCode(err)
	require.True(t, r, "a panicking consumer is retryable")
	require.Equal(t, "consumer_panic", code)
	_, err = panicking.Deliver(t.Context(), transport.Delivery{Member: route.Member{Destination: route.MeteringInputProcessor}})
	require.ErrorIs(t, err, transport.ErrNoConsumer)
}

// OB-CLAIM-2 / OB-PUB-1 with batched acks: each ack in a batch keeps its
// own fence (a stale one is reported lost while its neighbour commits), and
// an ack the published_at function rejects (OW009) fails the batch
// statement; the per-ack fallback then records the good ack and rejects the
// bad one. Clause OB-CLAIM-2.ack-fence: the stale ack answers ErrLeaseLost.
func TestAckBatch_OBCLAIM2_EachAckKeepsItsFence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.appendRuns(t, 4)
	claims := b.claim(t, "w", 4, lease)
	require.Len(t, claims, 4)
	verify := func(c dispatcher.Claimed) dispatcher.VerifiedAck {
		t.Helper()
		res, err := b.consumer.Deliver(ctx, c.Delivery())
		require.NoError(t, err)
		v, err := dispatcher.VerifyResult(c, res)
		require.NoError(t, err)
		return v
	}
	stale := claims[1]
	stale.LeaseToken = "00000000-0000-4000-8000-000000000001"
	errs := b.store.AckBatch(ctx, []dispatcher.VerifiedAck{verify(claims[0]), verify(stale)})
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], dispatcher.ErrLeaseLost)

	// A claim whose envelope digest was corrupted in memory: the consumer and
	// the ack agree with it, but the database function compares with the
	// stored event and raises.
	corrupt := claims[2]
	corrupt.EnvelopeDigest.Value = strings.Repeat("0", 64)
	errs = b.store.AckBatch(ctx, []dispatcher.VerifiedAck{verify(corrupt), verify(claims[3])})
	require.Error(t, errs[0])
	require.Equal(t, outbox.CodePublicationInvalid, db.SQLState(errs[0]))
	require.NoError(t, errs[1])

	require.Equal(t, "acknowledged", b.delivery(t, claims[0].EventID).Status)
	require.Equal(t, "leased", b.delivery(t, claims[1].EventID).Status)
	require.Equal(t, "leased", b.delivery(t, claims[2].EventID).Status)
	require.Equal(t, "acknowledged", b.delivery(t, claims[3].EventID).Status)
	b.invariants(t)
}

// OB-DELIVER-7, exact interleaving 1: the holder's ack transaction has
// written its fenced transition (row locked, not committed) when the lease
// runs out; recovery skips the locked row, the ack commits, and nothing
// else happens.
func TestRecovery_OBDELIVER7_AckInFlightBeatsRecovery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "holder", 1, 300*time.Millisecond)[0]
	res, err := b.consumer.Deliver(ctx, c.Delivery())
	require.NoError(t, err)
	verified, err := dispatcher.VerifyResult(c, res)
	require.NoError(t, err)

	tx, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, dispatcher.AckTx(ctx, tx, verified))
	b.waitLeaseExpired(t, id)
	got, err := b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, got, "recovery skips the row the holder is acknowledging")
	require.NoError(t, tx.Commit(ctx))

	got, err = b.store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, "acknowledged", b.delivery(t, id).Status)
	require.Equal(t, []string{"acknowledged"}, b.finishes(t, id))
	b.invariants(t)
}

// OB-DELIVER-7, exact interleaving 2: recovery has finished the expired
// attempt (not committed yet) when the late holder acks: the ack's fence
// already fails on the expired lease, before and after recovery commits.
func TestRecovery_OBDELIVER7_RecoveryInFlightBeatsLateAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	id := b.appendRuns(t, 1)[0]
	c := b.claim(t, "holder", 1, time.Hour)[0]
	res, err := b.consumer.Deliver(ctx, c.Delivery())
	require.NoError(t, err)
	b.expireLease(t, id)

	tx, err := b.producer.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	got, err := dispatcher.RecoverExpiredTx(ctx, tx, nil, 10)
	require.NoError(t, err)
	require.Equal(t, 1, got[route.CoreOperations])

	require.ErrorIs(t, b.store.VerifyAndAck(ctx, c, res), dispatcher.ErrLeaseLost)
	require.NoError(t, tx.Commit(ctx))
	require.ErrorIs(t, b.store.VerifyAndAck(ctx, c, res), dispatcher.ErrLeaseLost)
	require.Equal(t, "pending", b.delivery(t, id).Status)
	require.Equal(t, []string{"lease_expired_unknown"}, b.finishes(t, id))
	b.invariants(t)
}

// OB-CLAIM-1: with a backlog, the rows the claim locks come from an ordered
// scan of the pending index per destination that stops at the limit — not a
// sequential or bitmap scan and sort of the whole backlog (the later sort
// only merges the per-destination heads).
func TestClaim_OBCLAIM1_PlanIsAnOrderedIndexScan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for i := 0; i < 10; i++ {
		b.appendRuns(t, 100)
	}
	_, err := b.producer.Exec(ctx, `ANALYZE outbox.outbox_deliveries`)
	require.NoError(t, err)
	claimSQL, args := dispatcher.ClaimStatement(dispatcher.ClaimParams{Owner: "w",
		Destinations: []route.Destination{"core_operations", "metering_input_processor"}, Limit: 16, Lease: 30 * time.Second})
	require.Equal(t, dispatcher.ClaimSQL(), claimSQL)
	rows, err := b.producer.Query(ctx, `EXPLAIN (FORMAT TEXT) `+claimSQL, args...)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	text := strings.Join(plan, "\n")
	locked := false
	for i, line := range plan {
		if strings.Contains(line, "LockRows") {
			require.Less(t, i+1, len(plan), text)
			require.Contains(t, plan[i+1], "Index Scan using outbox_deliveries_claim_pending", text)
			locked = true
		}
	}
	require.True(t, locked, text)
}

// OB-PUB-1 by construction: a transaction that acknowledges an event's last
// mandatory delivery without recording published_at cannot commit (OW015),
// while the dispatcher's ack (which calls outbox.record_publication) does.
func TestAck_OBPUB1_LastAckWithoutPublicationCannotCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := b.appendRuns(t, 2)
	claims := b.claim(t, "w", 2, lease)
	require.Len(t, claims, 2)
	c := claims[0]
	res, err := b.consumer.Deliver(ctx, c.Delivery())
	require.NoError(t, err)
	q := res.Ack.AppliedReceipt.Receipt
	// The fenced transition and finish alone, as a buggy writer would do it.
	err = db.WithTx(ctx, b.producer, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			WITH fenced AS (
			  UPDATE outbox.outbox_deliveries SET status = 'acknowledged', delivered_at = now(),
			    ack_consumer_name = consumer_name, ack_receipt_type = expected_receipt_type, ack_receipt_key = $3,
			    ack_receipt_schema_version = $4, ack_receipt_digest_algorithm_version = 'jcs-sha256-v1', ack_receipt_digest = $5,
			    ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1', ack_event_envelope_sha256 = $6
			  WHERE event_id = $1 AND current_attempt_id = $2 RETURNING current_attempt_id)
			INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
			SELECT current_attempt_id, 'acknowledged', 'none' FROM fenced`,
			c.EventID, c.AttemptID, q.Ref, q.SchemaVersion, q.Digest, c.EnvelopeDigest.Value)
		return err
	})
	require.Equal(t, outbox.CodePublicationMissing, db.SQLState(err))
	require.Equal(t, "leased", b.delivery(t, c.EventID).Status, "the whole transaction rolled back")

	require.NoError(t, b.store.VerifyAndAck(ctx, c, res))
	require.True(t, b.delivery(t, ids[0]).Published || b.delivery(t, ids[1]).Published)
	b.invariants(t)
}

// OB-CLAIM-2 / OB-DELIVER-5 (issue 17 item 2): the batch's acks are one
// set-based statement, and its fence is still exact per row. In one
// transaction, without the one-by-one fallback: an ack whose delivery was
// recovered and re-claimed by another worker (a stale token, a real one) and
// an ack whose lease ran out are reported lost and change nothing, while
// their neighbours in the same statement are acknowledged and published;
// the re-claimed delivery keeps the new holder's lease, and the new holder
// then acknowledges it.
func TestAckBatch_OBCLAIM2_StaleTokenInsideOneBatchStatement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := b.appendRuns(t, 5)
	claims := b.claim(t, "w1", 5, lease)
	require.Len(t, claims, 5)
	acks := b.verifiedAcks(t, claims)

	stale, expired := claims[1], claims[3]
	fresh := b.loseLeases(t, stale, expired)
	staleBefore, expiredBefore := b.delivery(t, stale.EventID), b.delivery(t, expired.EventID)

	tx, err := b.producer.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	require.NoError(t, err)
	out, err := dispatcher.AckBatchTx(ctx, tx, acks)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	for i, e := range out {
		if i == 1 || i == 3 {
			require.ErrorIs(t, e, dispatcher.ErrLeaseLost, "ack %d", i)
			continue
		}
		require.NoError(t, e, "ack %d", i)
		d := b.delivery(t, ids[i])
		require.Equal(t, "acknowledged", d.Status)
		require.True(t, d.Published, "published_at of event %d", i)
		require.Equal(t, []string{"acknowledged"}, b.finishes(t, ids[i]))
	}
	require.Equal(t, staleBefore, b.delivery(t, stale.EventID), "a stale token inside a batch changes nothing")
	require.Equal(t, []string{"lease_expired_unknown", ""}, b.finishes(t, stale.EventID))
	require.Equal(t, expiredBefore, b.delivery(t, expired.EventID), "an expired lease inside a batch changes nothing")
	require.Equal(t, []string{""}, b.finishes(t, expired.EventID))

	res, err := b.consumer.Deliver(ctx, fresh.Delivery())
	require.NoError(t, err)
	v, err := dispatcher.VerifyResult(fresh, res)
	require.NoError(t, err)
	require.NoError(t, b.store.AckBatch(ctx, []dispatcher.VerifiedAck{v})[0])
	require.Equal(t, []string{"lease_expired_unknown", "acknowledged"}, b.finishes(t, stale.EventID))
	require.True(t, b.delivery(t, stale.EventID).Published)
	b.invariants(t)
}

// OB-DELIVER-2 / OB-CLAIM-2 with batched retries (issue 17, item 2): one
// call of outbox.retry_delivery_batch, as the dispatcher role, records a
// batch of retryable outcomes in one statement, each under its own fence and
// with its own backoff and error code. A stale token (the delivery was
// recovered and re-claimed by another worker) and an expired lease inside
// the batch are reported lost and change nothing; their neighbours go back
// to pending with one retryable finish each, all written by one statement
// (one transaction timestamp).
func TestRetryBatch_OBDELIVER2_EachRetryKeepsItsFence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := b.appendRuns(t, 5)
	store := dispatcher.NewStore(dispatcherRolePool(t, b.producerDSN), 5*time.Second)
	claims, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "w1", Limit: 5, Lease: lease})
	require.NoError(t, err)
	require.Len(t, claims, 5)
	byID := map[string]dispatcher.Claimed{}
	for _, c := range claims {
		byID[c.EventID] = c
	}

	stale, expired := byID[ids[1]], byID[ids[3]]
	b.loseLeases(t, stale, expired)
	staleBefore, expiredBefore := b.delivery(t, stale.EventID), b.delivery(t, expired.EventID)

	out := store.RetryBatch(ctx, []dispatcher.RetryRequest{
		{Fence: byID[ids[0]].Fence, Backoff: time.Hour, Code: "owner_unavailable"},
		{Fence: stale.Fence, Backoff: 0, Code: "flaky"},
		{Fence: byID[ids[2]].Fence, Backoff: 0, Code: "consumer_timeout"},
		{Fence: expired.Fence, Backoff: 0, Code: "flaky"},
		{Fence: byID[ids[4]].Fence, Backoff: 2 * time.Hour, Code: "owner_unavailable"},
	})
	require.NoError(t, out[0])
	require.ErrorIs(t, out[1], dispatcher.ErrLeaseLost)
	require.NoError(t, out[2])
	require.ErrorIs(t, out[3], dispatcher.ErrLeaseLost)
	require.NoError(t, out[4])

	for i, code := range map[int]string{0: "owner_unavailable", 2: "consumer_timeout", 4: "owner_unavailable"} {
		d := b.delivery(t, ids[i])
		require.Equal(t, "pending", d.Status, "delivery %d", i)
		require.Equal(t, code, *d.LastError, "delivery %d keeps its own error code", i)
		require.Equal(t, []string{"retryable"}, b.finishes(t, ids[i]), "delivery %d", i)
	}
	require.Equal(t, staleBefore, b.delivery(t, stale.EventID), "a stale token inside a batch changes nothing")
	require.Equal(t, []string{"lease_expired_unknown", ""}, b.finishes(t, stale.EventID))
	require.Equal(t, expiredBefore, b.delivery(t, expired.EventID), "an expired lease inside a batch changes nothing")
	require.Equal(t, []string{""}, b.finishes(t, expired.EventID))

	var statements int
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT count(DISTINCT f.finished_at)
		FROM outbox.outbox_delivery_attempt_finishes f WHERE f.outcome = 'retryable'`).Scan(&statements))
	require.Equal(t, 1, statements, "the three retries were written by one statement")
	// Each row's own backoff: only the zero-backoff delivery is claimable now.
	again := b.claim(t, "w3", 5, lease)
	require.Len(t, again, 1)
	require.Equal(t, ids[2], again[0].EventID)
	require.Equal(t, 2, again[0].AttemptCount)
	var first, second bool
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT
		(SELECT available_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes' FROM outbox.outbox_deliveries WHERE event_id = $1),
		(SELECT available_at BETWEEN now() + interval '119 minutes' AND now() + interval '121 minutes' FROM outbox.outbox_deliveries WHERE event_id = $2)`,
		ids[0], ids[4]).Scan(&first, &second))
	require.True(t, first, "delivery 0 waits its own backoff (1h)")
	require.True(t, second, "delivery 4 waits its own backoff (2h)")
	b.invariants(t)
}

// OB-DELIVER-2, fail closed: outbox.retry_delivery_batch refuses arrays of
// different lengths, NULL elements and a negative backoff
// (invalid_parameter_value), as the dispatcher role, and changes nothing.
func TestRetryBatch_OBDELIVER2_RefusesMalformedBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := b.appendRuns(t, 2)
	pool := dispatcherRolePool(t, b.producerDSN)
	claims := b.claim(t, "w", 2, lease)
	require.Len(t, claims, 2)
	c0, c1 := claims[0], claims[1]
	call := func(backoffs []int64, codes []any) error {
		_, err := pool.Exec(ctx, `SELECT * FROM outbox.retry_delivery_batch($1::text[], $2::uuid[], $3::uuid[], $4::uuid[], $5::bigint[], $6::text[])`,
			[]string{string(c0.Destination), string(c1.Destination)}, []string{c0.EventID, c1.EventID},
			[]string{c0.AttemptID, c1.AttemptID}, []string{c0.LeaseToken, c1.LeaseToken}, backoffs, codes)
		return err
	}
	for name, err := range map[string]error{
		"lengths differ":   call([]int64{0}, []any{"flaky", "flaky"}),     // OB-DELIVER-2.retry-batch-arguments
		"a NULL code":      call([]int64{0, 0}, []any{"flaky", nil}),      // OB-DELIVER-2.retry-batch-arguments
		"negative backoff": call([]int64{0, -1}, []any{"flaky", "flaky"}), // OB-DELIVER-2.retry-batch-negative-backoff
	} {
		require.Equal(t, pgerrcode.InvalidParameterValue, db.SQLState(err), name)
	}
	b.untouched(t, ids...)
	b.invariants(t)
}
