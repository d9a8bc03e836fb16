package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/release"
)

// withOutbox bootstraps the first release for projection version 1 and
// appends events in one transaction.
func withOutbox(t *testing.T, b *bundle, events ...*envelope.Envelope) *deliveryset.Definition {
	t.Helper()
	ctx := t.Context()
	def, err := release.Bootstrap(ctx, b.pool, release.BootstrapParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test",
	})
	require.NoError(t, err)
	appendEvents(t, b.pool, events...)
	return def
}

func appendEvents(t *testing.T, pool *pgxpool.Pool, events ...*envelope.Envelope) {
	t.Helper()
	err := db.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		es := make([]envelope.Envelope, len(events))
		for i, e := range events {
			es[i] = *e
		}
		_, err := release.AppendTx(ctx, tx, es...)
		return err
	})
	require.NoError(t, err)
}

func claimOne(t *testing.T, store *dispatcher.Store) dispatcher.Claimed {
	t.Helper()
	claims, err := store.Claim(t.Context(), dispatcher.ClaimParams{
		Owner: "test-worker", Destinations: []route.Destination{route.CoreOperations}, Limit: 1, Lease: time.Minute,
	})
	require.NoError(t, err)
	require.Len(t, claims, 1)
	return claims[0]
}

// OB-DELIVER-4 / DS-8: a self-consistent receipt of a shadow projection
// version never satisfies a delivery frozen to the active version; the
// dispatcher's VerifyAndAck rejects it with a projection target mismatch and
// writes nothing. The receipt for the frozen version is accepted.
func TestShadowProjectionReceiptRejectedByDispatcher(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	o := operationstest.Sample(20)
	withOutbox(t, b, o.Run)
	store := dispatcher.NewStore(b.pool, 5*time.Second)
	c := claimOne(t, store)
	require.Equal(t, operationstest.Target(1), c.Member.ProjectionTarget)

	shadowing, err := projector.New(b.pool, projector.Config{Versions: []int64{1, 2}, BillingReads: operationstest.Found()})
	require.NoError(t, err)
	d := c.Delivery()
	d.Member.ProjectionTarget = operationstest.Target(2) // a shadow rebuild's delivery
	shadow, err := shadowing.Consume(ctx, d)
	require.NoError(t, err)

	err = store.VerifyAndAck(ctx, c, shadow)
	require.ErrorIs(t, err, receipt.ErrProjectionTargetMismatch)
	var rejected *dispatcher.AckRejectedError
	require.ErrorAs(t, err, &rejected)
	require.Equal(t, "ack_projection_target_mismatch", rejected.ReasonCode)
	type deliveryState struct {
		Status        string     `db:"status"`
		AckReceiptKey *string    `db:"ack_receipt_key"`
		PublishedAt   *time.Time `db:"published_at"`
	}
	const stateSQL = `SELECT d.status, d.ack_receipt_key, e.published_at
		FROM outbox.outbox_deliveries d JOIN outbox.outbox_events e USING (event_id) WHERE event_id = @event_id`
	st, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[deliveryState], stateSQL, pgx.NamedArgs{"event_id": o.Run.EventID})
	require.NoError(t, err)
	require.Equal(t, "leased", st.Status)
	require.Nil(t, st.AckReceiptKey)

	active, err := shadowing.Consume(ctx, c.Delivery())
	require.NoError(t, err)
	require.NoError(t, store.VerifyAndAck(ctx, c, active))
	st, err = operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[deliveryState], stateSQL, pgx.NamedArgs{"event_id": o.Run.EventID})
	require.NoError(t, err)
	require.Equal(t, "acknowledged", st.Status)
	require.NotNil(t, st.PublishedAt)
}

// OPS-5: readOperationsProjectionAppliedReceipt answers found | not_found |
// conflicting for a full receipt quadruple and the expected event and
// frozen member; requests outside the frozen scope are refused.
func TestOPS5DirectedReceiptRead(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	o := operationstest.Sample(21)
	def := withOutbox(t, b, o.Run, o.Wallet)
	store := dispatcher.NewStore(b.pool, 5*time.Second)
	c := claimOne(t, store)
	res, err := b.p.Consume(ctx, c.Delivery())
	require.NoError(t, err)
	require.NoError(t, store.VerifyAndAck(ctx, c, res))

	request := func(e *envelope.Envelope, q strict.Quadruple) projector.ReceiptReadRequest {
		dg, err := e.Digest()
		require.NoError(t, err)
		return projector.ReceiptReadRequest{
			Receipt: q, Definition: def.Quadruple(), Member: operationstest.Member(e.EventType, e.EventSchemaVersion, 1),
			Workload: "core-outbox-dispatcher", EventID: e.EventID, EventType: e.EventType,
			EventSchemaVersion: e.EventSchemaVersion, EventEnvelopeDigest: dg,
		}
	}
	read := func(req projector.ReceiptReadRequest) projector.ReceiptReadResult {
		t.Helper()
		out, err := projector.ReadOperationsProjectionAppliedReceipt(ctx, b.pool, req)
		require.NoError(t, err)
		return out
	}
	runEvent := o.Run
	if c.EventID != runEvent.EventID {
		runEvent = o.Wallet
	}
	other := o.Wallet
	if runEvent == o.Wallet {
		other = o.Run
	}
	q := res.Ack.AppliedReceipt.Receipt

	found := read(request(runEvent, q))
	require.Equal(t, projector.ReceiptFound, found.State)
	require.Equal(t, res.ReceiptBody, found.Body)
	require.Equal(t, q, found.Receipt.Receipt)

	fabricated := q
	fabricated.Ref = "oprcpt-unknown"
	require.Equal(t, projector.ReceiptNotFound, read(request(other, fabricated)).State)

	wrongDigest := q
	wrongDigest.Digest = q.Digest[:63] + "0"
	if q.Digest[63] == '0' {
		wrongDigest.Digest = q.Digest[:63] + "1"
	}
	got := read(request(runEvent, wrongDigest))
	require.Equal(t, projector.ReceiptConflicting, got.State)
	require.Equal(t, projector.ReceiptConflicting, read(request(other, q)).State, "a ref of another event")

	// Scope: the expected projection must be the frozen member's.
	shadowReq := request(runEvent, q)
	shadowReq.Member = operationstest.Member(runEvent.EventType, runEvent.EventSchemaVersion, 2)
	_, err = projector.ReadOperationsProjectionAppliedReceipt(ctx, b.pool, shadowReq)
	require.ErrorIs(t, err, projector.ErrReadScope)
	noWorkload := request(runEvent, q)
	noWorkload.Workload = ""
	_, err = projector.ReadOperationsProjectionAppliedReceipt(ctx, b.pool, noWorkload)
	require.ErrorIs(t, err, projector.ErrReadScope)
	otherDef := request(runEvent, q)
	otherDef.Definition.DeliverySetVersion = 2
	_, err = projector.ReadOperationsProjectionAppliedReceipt(ctx, b.pool, otherDef)
	require.ErrorIs(t, err, projector.ErrReadScope)
}
