// Package admintest builds a realistic outbox state for the tests of the
// admin page and of `oceanway inspect`: events appended with the real
// AppendTx into dbtest databases, driven through the real dispatcher store
// (claim, retry, quarantine, verified ack), so the pages show attempt
// histories exactly as production writes them.
package admintest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admin"
	adminschema "github.com/oceanway/core/internal/admin/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

// HostileReason is stored as a quarantine reason and must come back escaped.
const HostileReason = `<script>alert("owned")</script> & <img src=x onerror=alert(1)>`

// Lines are the migration lines of the worlds' databases: every boundary
// carries the admin lookup indexes, core the operations line beside them.
func Lines() []migrate.Line {
	return []migrate.Line{outboxschema.Line(), adminschema.Line(), operationsschema.Line()}
}

// Lease is the lease of the test claims.
const Lease = time.Minute

// World is a realistic outbox state in two producer databases, built
// through the real append and dispatcher paths:
//
// core (core_operations):
//   - RunA's run.created: claimed and acknowledged (published);
//   - the wallet.reserved of reservation Res (runId RunA): claimed, retried
//     (consumer_busy), claimed again and quarantined with HostileReason;
//   - RunB's run.created: pending, never claimed;
//   - RunC's run.created: claimed, in flight (leased).
//
// execution (metering_input_processor):
//   - an execution.attempt-eligibility.finalized of RunA / Res: pending.
type World struct {
	Bundle *dbtest.Bundle
	Reader *admin.Reader

	RunA, RunB, RunC, Res string

	AckedEvent, QuarantinedEvent, PendingEvent, LeasedEvent, ExecutionEvent string
}

// NewWorld builds the world in fresh core and execution databases.
func NewWorld(t testing.TB) *World {
	t.Helper()
	ctx := context.Background()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution}, Lines: Lines(), MaxConns: 8})
	for _, p := range []*pgxpool.Pool{b.Core(), b.Execution()} {
		_, err := release.Bootstrap(ctx, p, release.BootstrapParams{
			ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "admin-test",
		})
		require.NoError(t, err)
	}
	w := &World{Bundle: b, RunA: uuid.NewString(), RunB: uuid.NewString(), RunC: uuid.NewString(), Res: uuid.NewString()}
	core := dispatcher.NewStore(b.Core(), 5*time.Second)

	// RunA acknowledged.
	w.AckedEvent = AppendEvent(t, b.Core(), RunCreated(w.RunA, w.Res))
	c := ClaimOne(t, core, w.AckedEvent)
	require.NoError(t, core.VerifyAndAck(ctx, c, AckFor(t, c)))

	// Reservation: retried, then quarantined.
	w.QuarantinedEvent = AppendEvent(t, b.Core(), WalletReserved(w.RunA, w.Res))
	c = ClaimOne(t, core, w.QuarantinedEvent)
	require.NoError(t, core.Retry(ctx, c.Fence, 0, "consumer_busy"))
	c = ClaimOne(t, core, w.QuarantinedEvent)
	require.NoError(t, core.Quarantine(ctx, c.Fence, "digest_conflict", HostileReason, false))

	// RunC leased (in flight), then RunB pending.
	w.LeasedEvent = AppendEvent(t, b.Core(), RunCreated(w.RunC, uuid.NewString()))
	ClaimOne(t, core, w.LeasedEvent)
	w.PendingEvent = AppendEvent(t, b.Core(), RunCreated(w.RunB, uuid.NewString()))

	// Execution: pending.
	w.ExecutionEvent = AppendEvent(t, b.Execution(), AttemptEligibility(w.RunA, w.Res))

	w.Reader = admin.NewReader(w.Boundaries(), admin.Config{})
	return w
}

// Boundaries are the world's pools by boundary name.
func (w *World) Boundaries() admin.Boundaries {
	return admin.Boundaries{"core": w.Bundle.Core(), "execution": w.Bundle.Execution()}
}

// RunCreated is a run.created@2.0 of runID and reservationID.
func RunCreated(runID, reservationID string) envelope.Envelope {
	e := sample.Envelope(envelope.RunCreatedV2, 0)
	e.EventID = outbox.NewEventID()
	e.AggregateID = runID
	e.Payload["runId"] = runID
	e.Payload["billingReservationId"] = reservationID
	return e
}

// WalletReserved is a wallet.reserved@2.0 of reservationID for runID.
func WalletReserved(runID, reservationID string) envelope.Envelope {
	e := sample.Envelope(envelope.WalletReservedV2, 0)
	e.EventID = outbox.NewEventID()
	e.AggregateID = reservationID
	e.Payload["runId"] = runID
	e.Payload["billingReservationId"] = reservationID
	return e
}

// AttemptEligibility is an execution.attempt-eligibility.finalized@1 of runID and reservationID.
func AttemptEligibility(runID, reservationID string) envelope.Envelope {
	e := sample.Envelope(envelope.ExecutionAttemptEligibilityFinalizedV1, 0)
	e.EventID = outbox.NewEventID()
	e.Payload["runId"] = runID
	e.Payload["billingReservationId"] = reservationID
	return e
}

// AppendEvent appends e in its own transaction and returns its event id.
func AppendEvent(t testing.TB, pool *pgxpool.Pool, e envelope.Envelope) string {
	t.Helper()
	_, err := db.WithTxV(context.Background(), pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, e)
	})
	require.NoError(t, err)
	return e.EventID
}

// ClaimOne claims the eligible deliveries (the test keeps at most one
// eligible at a time) and returns the one of eventID.
func ClaimOne(t testing.TB, s *dispatcher.Store, eventID string) dispatcher.Claimed {
	t.Helper()
	claims, err := s.Claim(context.Background(), dispatcher.ClaimParams{Owner: "admin-test", Limit: 10, Lease: Lease})
	require.NoError(t, err)
	ids := make([]string, len(claims))
	for i, c := range claims {
		ids[i] = c.EventID
	}
	require.Equal(t, []string{eventID}, ids, "exactly the expected delivery is eligible")
	return claims[0]
}

// AckFor is what a real Operations consumer returns for c: a sealed
// OperationsProjectionAppliedReceipt@1 and its ActiveConsumerAck@1
// (outboxtest.Ack).
func AckFor(t testing.TB, c dispatcher.Claimed) transport.Result {
	t.Helper()
	require.Equal(t, route.CoreOperations, c.Destination)
	res, err := outboxtest.Ack(context.Background(), c.Delivery())
	require.NoError(t, err)
	return res
}

// QuarantinePending quarantines RunB's pending delivery (the only eligible
// one: RunC's lease is still valid).
func QuarantinePending(t testing.TB, w *World) {
	t.Helper()
	s := dispatcher.NewStore(w.Bundle.Core(), 5*time.Second)
	c := ClaimOne(t, s, w.PendingEvent)
	require.NoError(t, s.Quarantine(context.Background(), c.Fence, "unknown_pair", "second quarantine", false))
}

// NewAckedOnly is a core database with two acknowledged run.created events.
func NewAckedOnly(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: Lines()})
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1})
	require.NoError(t, err)
	s := dispatcher.NewStore(b.Core(), 5*time.Second)
	for i := 0; i < 2; i++ {
		id := AppendEvent(t, b.Core(), RunCreated(uuid.NewString(), uuid.NewString()))
		c := ClaimOne(t, s, id)
		require.NoError(t, s.VerifyAndAck(ctx, c, AckFor(t, c)))
	}
	return b.Core()
}
