package admin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func countsOf(t *testing.T, rows []admin.DestinationCounts, boundary, destination string) admin.DestinationCounts {
	t.Helper()
	for _, r := range rows {
		if r.Boundary == boundary && r.Destination == destination {
			return r
		}
	}
	t.Fatalf("no counts for %s/%s in %+v", boundary, destination, rows)
	return admin.DestinationCounts{}
}

func TestOverviewCountsQuarantinesAndDefinitions(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	o := w.Reader.Overview(t.Context())

	require.Len(t, o.Boundaries, 2)
	require.Equal(t, "core", o.Boundaries[0].Boundary)
	require.Equal(t, "execution", o.Boundaries[1].Boundary)
	require.Empty(t, admin.Failed(o.Boundaries))

	core := countsOf(t, o.Deliveries, "core", "core_operations")
	require.Equal(t, admin.DestinationCounts{
		Boundary: "core", Destination: "core_operations",
		Pending: 1, Leased: 1, Acknowledged: 1, Quarantined: 1, Total: 4,
		OldestPendingCreatedAt: core.OldestPendingCreatedAt, OldestPendingAgeSeconds: core.OldestPendingAgeSeconds,
	}, core)
	require.NotNil(t, core.OldestPendingCreatedAt)
	require.GreaterOrEqual(t, core.OldestPendingAgeSeconds, 0.0)
	// The active definition routes core events to billing_finalization_coordinator
	// too: listed with zeros.
	bfc := countsOf(t, o.Deliveries, "core", "billing_finalization_coordinator")
	require.Zero(t, bfc.Total)
	require.Nil(t, bfc.OldestPendingCreatedAt)
	// Only destinations the boundary produces to are listed.
	var destinations []string
	for _, c := range o.Deliveries {
		destinations = append(destinations, c.Boundary+"/"+c.Destination)
	}
	require.Equal(t, []string{"core/billing_finalization_coordinator", "core/core_operations",
		"execution/billing_finalization_coordinator", "execution/metering_input_processor"}, destinations)
	exec := countsOf(t, o.Deliveries, "execution", "metering_input_processor")
	require.Equal(t, int64(1), exec.Pending)
	require.Equal(t, int64(1), exec.Total)

	require.Equal(t, int64(1), o.Quarantine.Total)
	require.False(t, o.Quarantine.Truncated)
	require.Len(t, o.Quarantine.Items, 1)
	q := o.Quarantine.Items[0]
	require.Equal(t, w.QuarantinedEvent, q.EventID)
	require.Equal(t, "core", q.Boundary)
	require.Equal(t, "core_operations", q.Destination)
	require.Equal(t, "digest_conflict: "+admintest.HostileReason, q.Reason)
	require.Equal(t, 2, q.AttemptCount)
	require.Equal(t, "digest_conflict", q.LastErrorCode)
	require.Equal(t, "wallet.reserved@2.0", q.EventType)

	require.Len(t, o.Definitions, 2)
	for i, b := range []string{"core", "execution"} {
		d := o.Definitions[i]
		require.Equal(t, b, d.Boundary)
		require.Equal(t, int64(1), d.Version)
		require.Equal(t, "active", d.Status)
		require.NotNil(t, d.ActivatedAt)
		require.Equal(t, "jcs-sha256-v1", d.DigestAlgorithmVersion)
		require.Len(t, d.Digest, 64)
		require.Equal(t, 14, d.MemberCount)
		require.Equal(t, 13, d.ApplicableEventCount)
		require.Equal(t, []string{"billing_finalization_coordinator", "billing_settlement_catch_up", "core_operations", "metering_input_processor"}, d.Destinations)
		require.Equal(t, "admin-test", d.SourceRelease)
	}
	require.Len(t, o.Projections, 2)
	require.Equal(t, projector.ProjectionName, o.Projections[0].ProjectionName)
}

func TestQuarantineListIsBounded(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := admin.NewReader(w.Boundaries(), admin.Config{QuarantineLimit: 1})
	q := r.Quarantines(t.Context())
	require.Equal(t, int64(1), q.Quarantine.Total)
	require.False(t, q.Quarantine.Truncated)

	admintest.QuarantinePending(t, w)
	q = r.Quarantines(t.Context())
	require.Equal(t, int64(2), q.Quarantine.Total)
	require.True(t, q.Quarantine.Truncated)
	require.Len(t, q.Quarantine.Items, 1)
	require.Equal(t, w.PendingEvent, q.Quarantine.Items[0].EventID, "newest first")
}

func TestLookupByEventRunAndReservation(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	ctx := t.Context()

	res, err := w.Reader.Lookup(ctx, admin.KindEvent, w.QuarantinedEvent)
	require.NoError(t, err)
	require.Len(t, res.Events, 1)
	e := res.Events[0]
	require.Equal(t, []admin.IDKind{admin.KindEvent}, e.MatchedBy)
	require.Equal(t, "wallet.reserved@2.0", e.EventType)
	require.Equal(t, int64(1), e.DeliverySetVersion)
	require.Len(t, e.EventEnvelopeSHA256, 64)
	require.Contains(t, e.Envelope, `"eventId":"`+w.QuarantinedEvent+`"`)
	sum := sha256.Sum256([]byte(e.Envelope))
	require.Equal(t, hex.EncodeToString(sum[:]), e.EventEnvelopeSHA256, "the envelope is the exact stored canonical text")
	require.Nil(t, e.PublishedAt)
	require.Len(t, e.Deliveries, 1)
	d := e.Deliveries[0]
	require.Equal(t, "quarantined", d.Status)
	require.Equal(t, 2, d.AttemptCount)
	require.NotNil(t, d.Quarantine)
	require.Equal(t, "digest_conflict: "+admintest.HostileReason, d.Quarantine.Reason)
	require.Len(t, d.Attempts, 2)
	require.Equal(t, []string{"retryable", "non_retryable"}, []string{d.Attempts[0].Outcome, d.Attempts[1].Outcome})
	require.Equal(t, []string{"retry_scheduled", "quarantined"}, []string{d.Attempts[0].RetryDisposition, d.Attempts[1].RetryDisposition})
	require.Equal(t, "consumer_busy", d.Attempts[0].NormalizedErrorCode)
	require.Equal(t, d.Quarantine.AttemptID, d.Attempts[1].AttemptID)
	require.Equal(t, 1, d.Attempts[0].Number)
	require.Equal(t, 2, d.Attempts[1].Number)

	// The acknowledged event: published, receipt frozen, one finished attempt.
	res, err = w.Reader.Lookup(ctx, admin.KindEvent, w.AckedEvent)
	require.NoError(t, err)
	require.Len(t, res.Events, 1)
	require.NotNil(t, res.Events[0].PublishedAt)
	d = res.Events[0].Deliveries[0]
	require.Equal(t, "acknowledged", d.Status)
	require.NotNil(t, d.Ack)
	require.Equal(t, "OperationsProjectionAppliedReceipt", d.Ack.ReceiptType)
	require.Equal(t, projector.ProjectionName+"@1", d.RequiredProjection)
	require.Len(t, d.Attempts, 1)
	require.Equal(t, "acknowledged", d.Attempts[0].Outcome)

	// The leased event: one start, no finish.
	res, err = w.Reader.Lookup(ctx, admin.KindEvent, w.LeasedEvent)
	require.NoError(t, err)
	d = res.Events[0].Deliveries[0]
	require.Equal(t, "leased", d.Status)
	require.Equal(t, "admin-test", d.LeaseOwner)
	require.Len(t, d.Attempts, 1)
	require.False(t, d.Attempts[0].Finished())

	// Run A: its run.created (aggregate), the wallet event and the
	// execution event (payload runId), across two boundaries.
	res, err = w.Reader.Lookup(ctx, admin.KindRun, w.RunA)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{w.AckedEvent, w.QuarantinedEvent, w.ExecutionEvent}, eventIDs(res.Events))
	require.False(t, res.Truncated)
	for _, e := range res.Events {
		require.Equal(t, []admin.IDKind{admin.KindRun}, e.MatchedBy)
		if e.EventID == w.ExecutionEvent {
			require.Equal(t, "execution", e.Boundary)
			require.Equal(t, "metering_input_processor", e.Deliveries[0].Destination)
		}
	}

	// Reservation: the same three events.
	res, err = w.Reader.Lookup(ctx, admin.KindReservation, w.Res)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{w.AckedEvent, w.QuarantinedEvent, w.ExecutionEvent}, eventIDs(res.Events))

	// Any kind on a run id: matched as run only.
	res, err = w.Reader.Lookup(ctx, admin.KindAny, w.RunB)
	require.NoError(t, err)
	require.Equal(t, []string{w.PendingEvent}, eventIDs(res.Events))

	// Uppercase input is the same UUID.
	res, err = w.Reader.Lookup(ctx, admin.KindEvent, upper(w.AckedEvent))
	require.NoError(t, err)
	require.Equal(t, []string{w.AckedEvent}, eventIDs(res.Events))

	// Nothing found is not an error.
	res, err = w.Reader.Lookup(ctx, admin.KindAny, "00000000-0000-0000-0000-000000000000")
	require.NoError(t, err)
	require.Empty(t, res.Events)
}

func TestLookupTruncatesAtLimit(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	r := admin.NewReader(w.Boundaries(), admin.Config{LookupLimit: 1})
	res, err := r.Lookup(t.Context(), admin.KindRun, w.RunA)
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.Len(t, res.Events, 2, "one per boundary")
}

func TestLookupRejectsGarbageWithoutQuerying(t *testing.T) {
	t.Parallel()
	// A pool to a server that does not exist: any query would fail with a
	// connection error, so a typed error proves no query ran.
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	r := admin.NewReader(admin.Boundaries{"core": pool}, admin.Config{})
	for _, bad := range []string{"", "x", "'; DROP TABLE outbox.outbox_events; --", "{00000000-0000-0000-0000-000000000000}",
		" 00000000-0000-0000-0000-000000000000", "00000000000000000000000000000000", "0000000g-0000-0000-0000-000000000000",
		"urn:uuid:00000000-0000-0000-0000-000000000000"} {
		_, err := r.Lookup(t.Context(), admin.KindRun, bad)
		require.ErrorIs(t, err, admin.ErrInvalidID, bad)
		var ide *admin.InvalidIDError
		require.True(t, errors.As(err, &ide))
		require.Equal(t, admin.KindRun, ide.Kind)
	}
	_, err = r.Lookup(t.Context(), "nonsense", "00000000-0000-0000-0000-000000000000")
	require.ErrorIs(t, err, admin.ErrUnknownKind)
}

func TestUnreadableBoundaryIsReportedAndOthersStillShown(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	broken, err := pgxpool.New(t.Context(), db.WithDatabase(w.Bundle.DSNs["core"], w.Bundle.Prefix+"_missing"))
	require.NoError(t, err)
	t.Cleanup(broken.Close)
	r := admin.NewReader(admin.Boundaries{"core": w.Bundle.Core(), "gateway": broken}, admin.Config{})
	o := r.Overview(t.Context())
	require.Len(t, o.Boundaries, 2)
	failed := admin.Failed(o.Boundaries)
	require.Len(t, failed, 1)
	require.Equal(t, "gateway", failed[0].Boundary)
	require.Equal(t, int64(4), countsOf(t, o.Deliveries, "core", "core_operations").Total)
}

func TestCompletenessOutboxSide(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := w.Reader.Completeness(t.Context())
	require.Empty(t, admin.Failed(c.Boundaries))
	require.Len(t, c.Outbox, 2)
	core := c.Outbox[0]
	require.Equal(t, "core", core.Boundary)
	require.Equal(t, admin.VerdictIncomplete, core.Verdict)
	require.Equal(t, []string{admin.ReasonOpenMandatory, admin.ReasonQuarantinedMandatory}, core.Reasons)
	require.Equal(t, int64(4), core.Events)
	require.Equal(t, int64(1), core.Published)
	require.Equal(t, int64(3), core.Unpublished())
	require.Zero(t, core.PublishedWithOpenMandatory)
	require.Zero(t, core.UnpublishedAllAcknowledged)
	ops := core.Destination("core_operations")
	require.Equal(t, admin.DestinationCompleteness{Destination: "core_operations", Mandatory: 4, Open: 2, Quarantined: 1, Acknowledged: 1}, ops)
	require.Equal(t, admin.VerdictIncomplete, c.Outbox[1].Verdict)
	require.Equal(t, []string{admin.ReasonOpenMandatory}, c.Outbox[1].Reasons)

	// The Operations read model's answer on core: no proof recorded yet.
	require.NotNil(t, c.Operations)
	require.Empty(t, c.Operations.Error)
	require.Equal(t, projector.ProjectionName+"@1", c.Operations.Projection)
	require.Equal(t, readmodel.Unverified, c.Operations.VerificationState)
	require.Equal(t, readmodel.ReasonNoCompletedSnapshot, c.Operations.VerificationReason)
	require.Nil(t, c.Operations.CompletenessAsOf)

	// Once a proof is recorded (by the Operations side, not by admin), the
	// answer compares against it: current, and a partial source gap.
	proof, err := readmodel.New(w.Bundle.Core()).ProveCompleteness(t.Context(), readmodel.Params{})
	require.NoError(t, err)
	c = w.Reader.Completeness(t.Context())
	require.Equal(t, readmodel.Verified, c.Operations.VerificationState)
	require.Equal(t, readmodel.VerifiedCurrent, c.Operations.SnapshotCurrency)
	require.Equal(t, readmodel.PartialSourceGap, c.Operations.ProjectionCompleteness)
	require.Equal(t, proof.SnapshotID, c.Operations.CompletenessAsOf.SnapshotID)
	require.Contains(t, c.Operations.ProofReasons, readmodel.ReasonQuarantined)
}

func TestCompletenessCompleteWhenEverythingAcknowledged(t *testing.T) {
	t.Parallel()
	b := admintest.NewAckedOnly(t)
	c := admin.NewReader(admin.Boundaries{"core": b}, admin.Config{}).Completeness(t.Context())
	require.Len(t, c.Outbox, 1)
	require.Equal(t, admin.VerdictComplete, c.Outbox[0].Verdict)
	require.Empty(t, c.Outbox[0].Reasons)
	require.Equal(t, int64(2), c.Outbox[0].Published)
	require.Nil(t, c.Outbox[0].OldestUnpublishedCreatedAt)
}

func eventIDs(events []admin.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EventID
	}
	return out
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// OB-DELIVER-2 (issue 18, item 5): a delivery waiting because its
// destination has no consumer in the dispatching process (or its pair is not
// supported) is visible on the overview with the time it is retried next.
func TestOverviewShowsUnsupportedWaits(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	ctx := t.Context()
	store := dispatcher.NewStore(w.Bundle.Execution(), 5*time.Second)
	claimed, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "t", Destinations: []route.Destination{route.MeteringInputProcessor},
		Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.NoError(t, store.Retry(ctx, claimed[0].Fence, time.Hour, transport.CodeNoConsumer))

	o := w.Reader.Overview(ctx)
	exec := countsOf(t, o.Deliveries, "execution", "metering_input_processor")
	require.Equal(t, int64(1), exec.UnsupportedWaiting)
	require.NotNil(t, exec.UnsupportedRetryAt)
	require.Greater(t, time.Until(*exec.UnsupportedRetryAt), 50*time.Minute)
	require.Zero(t, countsOf(t, o.Deliveries, "core", "core_operations").UnsupportedWaiting)
}
