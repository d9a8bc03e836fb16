package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/envelopetest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/projector"
	_ "github.com/oceanway/core/internal/operations/schema" // core boundaries carry the operations line
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// hostileReason is stored as a quarantine reason and must come back escaped.
const hostileReason = `<script>alert("owned")</script> & <img src=x onerror=alert(1)>`

const lease = time.Minute

// world is a realistic outbox state in two producer databases, built
// through the real append and dispatcher paths:
//
// core (core_operations):
//   - RunA's run.created: claimed and acknowledged (published);
//   - the wallet.reserved of reservation Res (runId RunA): claimed, retried
//     (consumer_busy), claimed again and quarantined with hostileReason;
//   - RunB's run.created: pending, never claimed;
//   - RunC's run.created: claimed, in flight (leased).
//
// execution (metering_input_processor):
//   - an execution.attempt-eligibility.finalized of RunA / Res: pending.
type world struct {
	bundle *dbtest.Bundle
	reader *admin.Reader

	RunA, RunB, RunC, Res string

	AckedEvent, QuarantinedEvent, PendingEvent, LeasedEvent, ExecutionEvent string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []migrate.Boundary{migrate.Core, migrate.Execution}, MaxConns: 8})
	for _, p := range []*pgxpool.Pool{b.Core(), b.Execution()} {
		_, err := outbox.BootstrapFirstRelease(ctx, p, outbox.BootstrapParams{
			ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "admin-test",
		})
		require.NoError(t, err)
	}
	w := &world{bundle: b, RunA: uuid.NewString(), RunB: uuid.NewString(), RunC: uuid.NewString(), Res: uuid.NewString()}
	core := dispatcher.NewStore(b.Core(), 5*time.Second)

	// RunA acknowledged.
	w.AckedEvent = appendEvent(t, b.Core(), runCreated(w.RunA, w.Res))
	c := claimOne(t, core, w.AckedEvent)
	require.NoError(t, core.VerifyAndAck(ctx, c, ackFor(t, c)))

	// Reservation: retried, then quarantined.
	w.QuarantinedEvent = appendEvent(t, b.Core(), walletReserved(w.RunA, w.Res))
	c = claimOne(t, core, w.QuarantinedEvent)
	require.NoError(t, core.Retry(ctx, c.Fence, 0, "consumer_busy"))
	c = claimOne(t, core, w.QuarantinedEvent)
	require.NoError(t, core.Quarantine(ctx, c.Fence, "digest_conflict", hostileReason, false))

	// RunC leased (in flight), then RunB pending.
	w.LeasedEvent = appendEvent(t, b.Core(), runCreated(w.RunC, uuid.NewString()))
	claimOne(t, core, w.LeasedEvent)
	w.PendingEvent = appendEvent(t, b.Core(), runCreated(w.RunB, uuid.NewString()))

	// Execution: pending.
	w.ExecutionEvent = appendEvent(t, b.Execution(), attemptEligibility(w.RunA, w.Res))

	w.reader = admin.NewReader(w.boundaries(), admin.Config{})
	return w
}

func (w *world) boundaries() admin.Boundaries {
	return admin.Boundaries{"core": w.bundle.Core(), "execution": w.bundle.Execution()}
}

func runCreated(runID, reservationID string) envelope.Envelope {
	e := envelopetest.Envelope(envelope.RunCreatedV2, 0)
	e.EventID = outbox.NewEventID()
	e.AggregateID = runID
	e.Payload["runId"] = runID
	e.Payload["billingReservationId"] = reservationID
	return e
}

func walletReserved(runID, reservationID string) envelope.Envelope {
	e := envelopetest.Envelope(envelope.WalletReservedV2, 0)
	e.EventID = outbox.NewEventID()
	e.AggregateID = reservationID
	e.Payload["runId"] = runID
	e.Payload["billingReservationId"] = reservationID
	return e
}

func attemptEligibility(runID, reservationID string) envelope.Envelope {
	e := envelopetest.Envelope(envelope.ExecutionAttemptEligibilityFinalizedV1, 0)
	e.EventID = outbox.NewEventID()
	e.Payload["runId"] = runID
	e.Payload["billingReservationId"] = reservationID
	return e
}

func appendEvent(t *testing.T, pool *pgxpool.Pool, e envelope.Envelope) string {
	t.Helper()
	_, err := db.WithTxV(context.Background(), pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return outbox.AppendTx(ctx, tx, e)
	})
	require.NoError(t, err)
	return e.EventID
}

// claimOne claims the eligible deliveries (the test keeps at most one
// eligible at a time) and returns the one of eventID.
func claimOne(t *testing.T, s *dispatcher.Store, eventID string) dispatcher.Claimed {
	t.Helper()
	claims, err := s.Claim(context.Background(), dispatcher.ClaimParams{Owner: "admin-test", Limit: 10, Lease: lease})
	require.NoError(t, err)
	ids := make([]string, len(claims))
	for i, c := range claims {
		ids[i] = c.EventID
	}
	require.Equal(t, []string{eventID}, ids, "exactly the expected delivery is eligible")
	return claims[0]
}

// ackFor builds what a real Operations consumer returns for c: a sealed
// OperationsProjectionAppliedReceipt@1 and its ActiveConsumerAck@1.
func ackFor(t *testing.T, c dispatcher.Claimed) transport.Result {
	t.Helper()
	r, err := receipt.NewOperationsProjectionAppliedReceipt(uuid.NewString(), c.Member.ProjectionTarget, receipt.EventFacts{
		EventID: c.EventID, EventType: c.EventType, EventSchemaVersion: c.EventSchemaVersion, EnvelopeDigest: c.EnvelopeDigest,
	}, time.Now())
	require.NoError(t, err)
	body, err := jcs.Marshal(r.ToJSON())
	require.NoError(t, err)
	decoded, err := receipt.DecodeOperationsProjectionAppliedReceipt(body)
	require.NoError(t, err)
	ack, err := receipt.AckFor(decoded)
	require.NoError(t, err)
	require.Equal(t, route.CoreOperations, c.Destination)
	return transport.Result{Ack: ack, ReceiptBody: body}
}

// quarantinePending quarantines RunB's pending delivery (the only eligible
// one: RunC's lease is still valid).
func quarantinePending(t *testing.T, w *world) {
	t.Helper()
	s := dispatcher.NewStore(w.bundle.Core(), 5*time.Second)
	c := claimOne(t, s, w.PendingEvent)
	require.NoError(t, s.Quarantine(context.Background(), c.Fence, "unknown_pair", "second quarantine", false))
}

// newAckedOnly is a core database with two acknowledged run.created events.
func newAckedOnly(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []migrate.Boundary{migrate.Core}})
	_, err := outbox.BootstrapFirstRelease(ctx, b.Core(), outbox.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1})
	require.NoError(t, err)
	s := dispatcher.NewStore(b.Core(), 5*time.Second)
	for i := 0; i < 2; i++ {
		id := appendEvent(t, b.Core(), runCreated(uuid.NewString(), uuid.NewString()))
		c := claimOne(t, s, id)
		require.NoError(t, s.VerifyAndAck(ctx, c, ackFor(t, c)))
	}
	return b.Core()
}
