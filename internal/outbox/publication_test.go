package outbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

func publishedAt(t *testing.T, b *testBundle, eventID string) *time.Time {
	t.Helper()
	var at *time.Time
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT published_at FROM outbox.outbox_events WHERE event_id = $1", eventID).Scan(&at))
	return at
}

// ackTx runs one dispatcher ack transaction (as the dispatcher role): claim,
// success finish, acknowledged delivery, then record_publication with the
// coordinates mutate returns.
func ackTx(t *testing.T, b *testBundle, ev outbox.AppendedEvent, dest route.Destination, mutate func(*outbox.PublicationParams)) (outbox.PublicationResult, error) {
	t.Helper()
	return db.WithTxV(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.PublicationResult, error) {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		a := ack{EventID: ev.EventID, Destination: dest, Attempt: claim(t, ctx, tx, ev.EventID, dest),
			ReceiptRef: "receipt-" + string(dest), ReceiptDigest: strings.Repeat("f", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
		a.write(t, ctx, tx)
		p := a.params(t)
		if mutate != nil {
			mutate(&p)
		}
		return outbox.RecordPublicationTx(ctx, tx, p)
	})
}

// OB-PUB-1: the controlled function answers not_complete while another
// mandatory delivery is open (the ack commits, published_at stays NULL),
// complete when the last one is acknowledged (CAS NULL → now), and invalid
// (raise, roll back) when the ack disagrees with the frozen member or event.
func TestRecordPublicationThreeOutcomes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0]

	invalid := map[string]func(*outbox.PublicationParams){
		"consumer of another destination": func(p *outbox.PublicationParams) { p.ConsumerName = route.OperationsProjector },
		"envelope digest":                 func(p *outbox.PublicationParams) { p.EventEnvelopeDigest.Value = strings.Repeat("0", 64) },
		"envelope digest algorithm":       func(p *outbox.PublicationParams) { p.EventEnvelopeDigest.Algorithm = "sha256" },
		"receipt type":                    func(p *outbox.PublicationParams) { p.ReceiptType = route.OperationsProjectionAppliedReceipt },
		"receipt schema version":          func(p *outbox.PublicationParams) { p.Receipt.SchemaVersion = "2" },
		"receipt key":                     func(p *outbox.PublicationParams) { p.Receipt.Ref = "another-receipt" },
		"receipt digest":                  func(p *outbox.PublicationParams) { p.Receipt.Digest = strings.Repeat("1", 64) },
		"event id":                        func(p *outbox.PublicationParams) { p.EventID = outbox.NewEventID() },
		"lease token":                     func(p *outbox.PublicationParams) { p.LeaseToken = outbox.NewEventID() },
		"attempt":                         func(p *outbox.PublicationParams) { p.AttemptID = outbox.NewEventID() },
	}
	for name, mutate := range invalid {
		_, err := ackTx(t, b, ev, route.BillingFinalizationCoordinator, mutate)
		requireCode(t, err, outbox.CodePublicationInvalid)
		require.ErrorIs(t, err, outbox.ErrPublicationInvalid, name)
	}
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT string_agg(status, ',') FROM outbox.outbox_deliveries WHERE event_id = $1", ev.EventID).Scan(&status))
	require.Equal(t, "pending,pending", status, "invalid acks rolled back")

	res, err := ackTx(t, b, ev, route.BillingFinalizationCoordinator, nil)
	require.NoError(t, err)
	require.Equal(t, outbox.PublicationNotComplete, res)
	require.Nil(t, publishedAt(t, b, ev.EventID), "not_complete keeps published_at NULL")

	res, err = ackTx(t, b, ev, route.CoreOperations, nil)
	require.NoError(t, err)
	require.Equal(t, outbox.PublicationComplete, res)
	first := publishedAt(t, b, ev.EventID)
	require.NotNil(t, first)

	// The trigger forbids resetting, changing or overwriting it — even for
	// the table owner; the roles cannot update it at all.
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_events SET published_at = NULL"), outbox.CodePublishedAtGuard)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_events SET published_at = published_at + interval '1 second'"), outbox.CodePublishedAtGuard)
	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		_, err := tx.Exec(ctx, "UPDATE outbox.outbox_events SET published_at = now()")
		return err
	})
	requireCode(t, err, pgerrcode.InsufficientPrivilege)
	require.Equal(t, first, publishedAt(t, b, ev.EventID))
}

// OB-PUB-1: published_at cannot be set by hand before every mandatory
// delivery is acknowledged; the function refuses a delivery that is not
// acknowledged and runs only under READ COMMITTED.
// Clause OW007.published-before-complete.
func TestPublishedAtGuards(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.outbox_events SET published_at = now()"), outbox.CodePublishedAtGuard)

	_, err := db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.PublicationResult, error) {
		a := ack{EventID: ev.EventID, Destination: route.CoreOperations, Attempt: claim(t, ctx, tx, ev.EventID, route.CoreOperations),
			ReceiptRef: "r", ReceiptDigest: strings.Repeat("f", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
		return outbox.RecordPublicationTx(ctx, tx, a.params(t)) // leased, not acknowledged
	})
	requireCode(t, err, outbox.CodePublicationInvalid)

	err = db.WithTxOptions(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(ctx context.Context, tx pgx.Tx) error {
		a := ack{EventID: ev.EventID, Destination: route.CoreOperations, Attempt: claim(t, ctx, tx, ev.EventID, route.CoreOperations),
			ReceiptRef: "r", ReceiptDigest: strings.Repeat("f", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
		a.write(t, ctx, tx)
		_, err := outbox.RecordPublicationTx(ctx, tx, a.params(t))
		return err
	})
	requireCode(t, err, outbox.CodeIsolationLevel)
	require.Nil(t, publishedAt(t, b, ev.EventID))
}

// OB-PUB-1 under concurrency: two sessions acknowledge the two deliveries of
// one event at the same time. The function serializes them on the event, so
// the second sees the first and exactly one answers complete.
func TestRecordPublicationConcurrentSiblingAcks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0]

	txA, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = txA.Rollback(ctx) }() // no-op after Commit; on a failed step the test has already failed
	a := ack{EventID: ev.EventID, Destination: route.CoreOperations, Attempt: claim(t, ctx, txA, ev.EventID, route.CoreOperations),
		ReceiptRef: "ra", ReceiptDigest: strings.Repeat("a", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
	a.write(t, ctx, txA)
	resA, err := outbox.RecordPublicationTx(ctx, txA, a.params(t))
	require.NoError(t, err)
	require.Equal(t, outbox.PublicationNotComplete, resA)

	type result struct {
		res outbox.PublicationResult
		err error
	}
	done := make(chan result, 1)
	pidB := make(chan uint32, 1)
	go func() {
		r, err := db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.PublicationResult, error) {
			pidB <- tx.Conn().PgConn().PID()
			c := ack{EventID: ev.EventID, Destination: route.BillingFinalizationCoordinator, Attempt: claim(t, ctx, tx, ev.EventID, route.BillingFinalizationCoordinator),
				ReceiptRef: "rb", ReceiptDigest: strings.Repeat("b", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
			c.write(t, ctx, tx)
			return outbox.RecordPublicationTx(ctx, tx, c.params(t))
		})
		done <- result{r, err}
	}()
	waitForLockWait(t, b, <-pidB)
	require.NoError(t, txA.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, outbox.PublicationComplete, r.res)
	require.NotNil(t, publishedAt(t, b, ev.EventID))
}

// waitForLockWait returns once backend pid waits on a lock (a signal from
// the server, not a sleep).
func waitForLockWait(t *testing.T, b *testBundle, pid uint32) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var waiting bool
		require.NoError(c, b.pool.QueryRow(t.Context(),
			"SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&waiting))
		require.True(c, waiting)
	}, 30*time.Second, 5*time.Millisecond, "backend %d never waited on a lock", pid)
}
