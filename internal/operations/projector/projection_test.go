package projector_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
)

var p1 = readmodel.Params{Projection: v1}

// OPS-3: a Wallet event projected before its Run waits in
// pending_unlinked_reservations (acknowledged, no operation summary) and is
// linked by the Run event after the causal and equality checks.
func TestOPS3WalletFirstThenRun(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	rm := readmodel.New(b.pool)
	o := operationstest.Sample(1)

	walletRes := b.ack(t, o.Wallet)
	require.Equal(t, o.Wallet.EventID, walletRes.Ack.EventID)
	_, err := rm.Operation(ctx, o.RunID, p1)
	require.ErrorIs(t, err, readmodel.ErrNotFound, "no operation summary from a wallet event alone")
	pending, err := rm.PendingUnlinkedReservations(ctx, p1)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, o.ReservationID, pending[0].BillingReservationID)
	require.Equal(t, o.Wallet.EventID, pending[0].WalletEventID)
	found, err := rm.Lookup(ctx, o.ReservationID, p1)
	require.NoError(t, err)
	require.Empty(t, found.Matches)
	require.Len(t, found.PendingUnlinked, 1)

	b.ack(t, o.Run)
	s, err := rm.Operation(ctx, o.RunID, p1)
	require.NoError(t, err)
	require.Equal(t, readmodel.ReservationReserved, s.Reservation.State)
	require.False(t, s.Reservation.SourceDelayed)
	require.Equal(t, o.Wallet.EventID, s.Reservation.EventID)
	require.Equal(t, "1500", s.Reservation.ReservedAmount)
	require.Equal(t, `{"kind":"credits"}`, s.Reservation.EconomicIdentity)
	pending, err = rm.PendingUnlinkedReservations(ctx, p1)
	require.NoError(t, err)
	require.Empty(t, pending)

	// Exact-identifier index: every identifier names the operation.
	for kind, id := range map[string]string{
		projector.IDRunID: o.RunID, projector.IDReservationID: o.ReservationID, projector.IDCorrelationID: o.CorrelationID,
		projector.IDOperationID: o.OperationID, "run event": o.Run.EventID, "wallet event": o.Wallet.EventID,
	} {
		res, err := rm.Lookup(ctx, id, p1)
		require.NoError(t, err, kind)
		require.Len(t, res.Matches, 1, kind)
		require.Equal(t, o.RunID, res.Matches[0].Operation.RunID, kind)
	}
	_, err = rm.Lookup(ctx, o.RunID[:20], p1)
	require.ErrorIs(t, err, readmodel.ErrInvalidIdentifier, "no prefix lookups")

	tl, err := rm.Timeline(ctx, o.RunID, p1)
	require.NoError(t, err)
	require.Len(t, tl, 2)
	require.Equal(t, o.Run.EventID, tl[0].EventID)
	require.Equal(t, projector.EffectOperationCreatedLinked, tl[0].Effect)
	require.Equal(t, projector.EffectReservationPending, tl[1].Effect)
}

// OPS-3: the summary of a Run whose wallet event has not arrived shows the
// reservation as source_delayed with no made-up fields; the wallet links it.
func TestOPS3RunFirstShowsSourceDelayed(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	rm := readmodel.New(b.pool)
	o := operationstest.Sample(2)
	b.ack(t, o.Run)
	s, err := rm.Operation(ctx, o.RunID, p1)
	require.NoError(t, err)
	require.Equal(t, readmodel.ReservationSourceDelayed, s.Reservation.State)
	require.True(t, s.Reservation.SourceDelayed)
	require.Empty(t, s.Reservation.EventID)
	require.Empty(t, s.Reservation.ReservedAmount)
	require.Nil(t, s.Reservation.Finalization)

	b.ack(t, o.Wallet)
	s, err = rm.Operation(ctx, o.RunID, p1)
	require.NoError(t, err)
	require.Equal(t, readmodel.ReservationReserved, s.Reservation.State)
	b.ack(t, o.Finalization)
	s, err = rm.Operation(ctx, o.RunID, p1)
	require.NoError(t, err)
	require.Equal(t, readmodel.ReservationFinalized, s.Reservation.State)
	require.Equal(t, "1234.5", s.Reservation.Finalization.SettledAmount)
	require.Equal(t, "265.5", s.Reservation.Finalization.ReleasedAmount)
}

// OPS-3: a Run and a Wallet-first reservation that fail the equality or
// causal checks are not linked: the later event is non_retryable and
// nothing is written.
func TestOPS3LinkChecksRejectMismatch(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*envelope.Envelope){
		"account":  func(e *envelope.Envelope) { e.Payload["billingAccountId"] = operationstest.ID(99, 2) },
		"manifest": func(e *envelope.Envelope) { e.Payload["runAdmissionManifestDigest"] = sample.Hex("other") },
		"tenant":   func(e *envelope.Envelope) { e.WorkspaceID = operationstest.ID(99, 902) },
		"causation": func(e *envelope.Envelope) {
			e.CausationID = operationstest.ID(99, 6)
		},
		"correlation": func(e *envelope.Envelope) { e.CorrelationID = operationstest.ID(99, 4) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			o := operationstest.Sample(3)
			wallet := operationstest.Rebuild(o.Wallet, edit)
			b.ack(t, wallet)
			before := b.state(t)
			_, err := b.deliver(t, o.Run)
			requireCode(t, err, false, projector.CodeLinkConflict) // OPS-3.run-link-mismatch
			require.ErrorIs(t, err, projector.ErrLinkConflict)
			require.Equal(t, before, b.state(t))

			// Run first, then the mismatching wallet: same answer.
			b2 := setup(t)
			b2.ack(t, o.Run)
			before = b2.state(t)
			_, err = b2.deliver(t, wallet)
			requireCode(t, err, false, projector.CodeLinkConflict) // OPS-3.wallet-link-mismatch
			require.Equal(t, before, b2.state(t))
		})
	}
}

// OPS-2: an event beyond the next aggregate revision records a pending gap,
// writes no receipt and returns a recoverable wait; when the missing
// revision is applied, the waiting event applies on its redelivery and its
// gap is resolved.
func TestOPS2RevisionGapThenFill(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	rm := readmodel.New(b.pool)
	o := operationstest.Sample(4)
	b.ack(t, o.Run)

	// billing.finalization.committed@1 is revision 2 of the reservation;
	// revision 1 (wallet.reserved@2.0) has not been applied.
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := b.deliver(t, o.Finalization)
		requireCode(t, err, true, projector.CodeRevisionGapWait)
		require.ErrorIs(t, err, projector.ErrRevisionGap)
	}
	require.Zero(t, b.countReceipts(t, o.Finalization.EventID), "no receipt for a waiting event")
	gaps, err := rm.PendingGaps(ctx, p1)
	require.NoError(t, err)
	require.Len(t, gaps, 1)
	g := gaps[0]
	require.Equal(t, o.Finalization.EventID, g.WaitingEventID)
	require.Equal(t, envelope.AggregateBillingReservation, g.AggregateType)
	require.Equal(t, o.ReservationID, g.AggregateID)
	require.EqualValues(t, 2, g.WaitingRevision)
	require.EqualValues(t, 0, g.AppliedRevision)
	require.Equal(t, 2, g.SeenCount)
	require.False(t, g.MissingRevisionsArrived)

	// The missing revision arrives.
	b.ack(t, o.Wallet)
	gaps, err = rm.PendingGaps(ctx, p1)
	require.NoError(t, err)
	require.Len(t, gaps, 1, "the gap stays open until the waiting event is applied")
	require.True(t, gaps[0].MissingRevisionsArrived)

	// The dispatcher's redelivery applies the waiting event.
	b.ack(t, o.Finalization)
	gaps, err = rm.PendingGaps(ctx, p1)
	require.NoError(t, err)
	require.Empty(t, gaps)
	s, err := rm.Operation(ctx, o.RunID, p1)
	require.NoError(t, err)
	require.Equal(t, readmodel.ReservationFinalized, s.Reservation.State)

	// The build summary counted two waits and three applications.
	type buildCounts struct {
		Applied int64 `db:"applied_count"`
		Waited  int64 `db:"waited_count"`
	}
	counts, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[buildCounts],
		"SELECT applied_count, waited_count FROM operations.projection_builds WHERE build_id = @build_id",
		pgx.NamedArgs{"build_id": b.p.BuildID()})
	require.NoError(t, err)
	require.EqualValues(t, 3, counts.Applied)
	require.EqualValues(t, 2, counts.Waited)
}

func (b *bundle) countReceipts(t *testing.T, eventID string) int {
	t.Helper()
	n, err := operationstest.QueryOne(t.Context(), b.pool, pgx.RowTo[int64],
		"SELECT count(*) FROM operations.applied_receipts WHERE event_id = @event_id", pgx.NamedArgs{"event_id": eventID})
	require.NoError(t, err)
	return int(n)
}

// CON-1 with OPS-2: a waiting event redelivered with another envelope digest
// is non_retryable.
func TestOPS2WaitingEventWithOtherDigestIsNonRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := operationstest.Sample(5)
	_, err := b.deliver(t, o.Finalization)
	requireCode(t, err, true, projector.CodeRevisionGapWait)
	before := b.state(t)
	changed := operationstest.Rebuild(o.Finalization, func(e *envelope.Envelope) { e.Payload["settledAmount"] = "1234"; e.Payload["releasedAmount"] = "266" })
	_, err = b.deliver(t, changed)
	requireCode(t, err, false, inbox.CodeEventDigestConflict)
	require.Equal(t, before, b.state(t))
}

// OPS-1 step 3: two different events claiming one aggregate revision.
func TestOPS1RevisionConflictIsNonRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := operationstest.Sample(6)
	b.ack(t, o.Run)
	b.ack(t, o.Wallet)
	before := b.state(t)
	second := operationstest.Rebuild(o.Wallet, func(e *envelope.Envelope) { e.EventID = operationstest.ID(6, 77) })
	_, err := b.deliver(t, second)
	requireCode(t, err, false, projector.CodeRevisionConflict)
	require.Equal(t, before, b.state(t))
}

// CON-2: the Billing owner read unavailable (or not yet readable) is
// retryable with nothing written; a conflicting owner fact is non_retryable.
func TestCON2OwnerReadUnavailableWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := operationstest.Sample(7)
	b.ack(t, o.Run)
	b.ack(t, o.Wallet)
	before := b.state(t)

	b.reads.Set("", errors.New("billing owner read: connection refused"))
	_, err := b.deliver(t, o.Finalization)
	requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
	b.reads.Set(projector.OwnerNotFound, nil)
	_, err = b.deliver(t, o.Finalization)
	requireCode(t, err, true, projector.CodeOwnerFactNotReadable)
	b.reads.Set(projector.OwnerConflicting, nil)
	_, err = b.deliver(t, o.Finalization)
	requireCode(t, err, false, projector.CodeOwnerFactConflicting)
	require.Equal(t, before, b.state(t))

	// The request is event-bound: the full committed quadruple and identities.
	req := b.reads.Requests[0]
	require.Equal(t, o.Finalization.EventID, req.EventID)
	require.Equal(t, o.ReservationID, req.BillingReservationID)
	require.Equal(t, fmt.Sprintf("billing-finalization-committed-%d", 7), req.Committed.Ref)

	// No owner read wired at all: retryable, nothing written.
	unwired, err := projector.New(b.pool, projector.Config{})
	require.NoError(t, err)
	_, err = unwired.Consume(t.Context(), operationstest.DeliveryV1(o.Finalization))
	requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
	require.Equal(t, before, b.state(t))

	b.reads.Set(projector.OwnerFound, nil)
	b.ack(t, o.Finalization)
}

// Known core_operations pairs this release does not project (here: a
// pair withheld by configuration) wait
// (recorded as unsupported schema in scope); pairs that are not routed to
// core_operations at all are non_retryable.
func TestUnsupportedAndUnroutedPairs(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, projector.Config{Inbox: inbox.Config{LockTimeout: time.Second},
		Withheld: []string{envelope.BillingLateCommandResultCommittedV1}}), t.Context()
	transition := sample.Built(envelope.BillingLateCommandResultCommittedV1, 1)
	_, err := b.deliver(t, transition)
	requireCode(t, err, true, projector.CodeUnsupportedPair)
	require.Equal(t, 1, b.count(t, "unsupported_events"))
	require.Zero(t, b.countReceipts(t, transition.EventID))

	closure := sample.Built(envelope.ExecutionRunFinalizationClosedV1, 2)
	before := b.state(t)
	_, err = b.deliver(t, closure)
	requireCode(t, err, false, projector.CodePairNotRouted)
	require.Equal(t, before, b.state(t))
	_, err = b.deliver(t, transition)
	requireCode(t, err, true, projector.CodeUnsupportedPair)
	seen, err := operationstest.QueryOne(ctx, b.pool, pgx.RowTo[int32],
		"SELECT seen_count FROM operations.unsupported_events WHERE event_id = @event_id", pgx.NamedArgs{"event_id": transition.EventID})
	require.NoError(t, err)
	require.EqualValues(t, 2, seen)
}

// The projection target is the frozen member's: a delivery frozen to a
// version this binary does not build is retryable with nothing written; a
// projector that builds a shadow version keeps one receipt per version.
func TestProjectionTargetComesFromFrozenMember(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	o := operationstest.Sample(8)
	_, err := b.p.Consume(ctx, operationstest.Delivery(o.Run, operationstest.Member(o.Run.EventType, o.Run.EventSchemaVersion, 2)))
	requireCode(t, err, true, projector.CodeProjectionUnsupported)
	require.Zero(t, b.countReceipts(t, o.Run.EventID))

	both, err := projector.New(b.pool, projector.Config{Versions: []int64{1, 2}, BillingReads: operationstest.Found()})
	require.NoError(t, err)
	r1, err := both.Consume(ctx, operationstest.Delivery(o.Run, operationstest.Member(o.Run.EventType, o.Run.EventSchemaVersion, 1)))
	require.NoError(t, err)
	r2, err := both.Consume(ctx, operationstest.Delivery(o.Run, operationstest.Member(o.Run.EventType, o.Run.EventSchemaVersion, 2)))
	require.NoError(t, err)
	require.NotEqual(t, r1.Ack.AppliedReceipt.Receipt, r2.Ack.AppliedReceipt.Receipt)
	rc1, err := receipt.DecodeOperationsProjectionAppliedReceipt(r1.ReceiptBody)
	require.NoError(t, err)
	rc2, err := receipt.DecodeOperationsProjectionAppliedReceipt(r2.ReceiptBody)
	require.NoError(t, err)
	require.Equal(t, operationstest.Target(1), rc1.Projection())
	require.Equal(t, operationstest.Target(2), rc2.Projection())
	require.Equal(t, 2, b.countReceipts(t, o.Run.EventID))
}

// OPS-3 under concurrency: Run and Wallet events of many operations are
// delivered at the same time from different goroutines; every reservation
// ends linked, none stays pending.
func TestOPS3ConcurrentRunAndWalletAlwaysLink(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t), t.Context()
	rm := readmodel.New(b.pool)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		o := operationstest.Sample(100 + i)
		for _, e := range []*envelope.Envelope{o.Run, o.Wallet} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.p.Consume(ctx, operationstest.DeliveryV1(e))
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	pending, err := rm.PendingUnlinkedReservations(ctx, p1)
	require.NoError(t, err)
	require.Empty(t, pending)
	for i := range n {
		s, err := rm.Operation(ctx, operationstest.Sample(100+i).RunID, p1)
		require.NoError(t, err)
		require.Equal(t, readmodel.ReservationReserved, s.Reservation.State)
	}
}
