package readmodel_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

type bundle struct {
	pool  *pgxpool.Pool
	adm   *admission.Service
	proj  *projector.Projector
	store *dispatcher.Store
	rm    *readmodel.Reader
}

func setup(t *testing.T, maxConns int32) *bundle {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All(), MaxConns: maxConns}).Core()
	_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test",
	})
	require.NoError(t, err)
	p, err := projector.New(pool, projector.Config{BillingReads: operationstest.Found(),
		Withheld: []string{envelope.BillingLateCommandResultCommittedV1}}) // the unsupported pair of these tests
	require.NoError(t, err)
	return &bundle{pool: pool, adm: admission.New(pool), proj: p, store: dispatcher.NewStore(pool, 5*time.Second), rm: readmodel.New(pool)}
}

func admitRequest() admission.Request {
	return admission.Request{
		AdmissionOperationID: uuid.NewString(), TenantKind: envelope.TenantOrganization,
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 100,
	}
}

func (b *bundle) admit(t *testing.T, n int) []admission.Result {
	t.Helper()
	out := make([]admission.Result, n)
	for i := range out {
		res, err := b.adm.Admit(t.Context(), admitRequest())
		require.NoError(t, err)
		out[i] = res
	}
	return out
}

// deliverAll plays a dispatcher by hand: claim, consume, verify and ack,
// until nothing is claimable.
func (b *bundle) deliverAll(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	for {
		claims, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "test", Destinations: []route.Destination{route.CoreOperations}, Limit: 50, Lease: time.Minute})
		require.NoError(t, err)
		if len(claims) == 0 {
			return
		}
		for _, c := range claims {
			res, err := b.proj.Consume(ctx, c.Delivery())
			require.NoError(t, err)
			require.NoError(t, b.store.VerifyAndAck(ctx, c, res))
		}
	}
}

func (b *bundle) completeness(t *testing.T) readmodel.Completeness {
	t.Helper()
	c, err := b.rm.Completeness(t.Context(), readmodel.Params{})
	require.NoError(t, err)
	return c
}

// OPS-4: without a completed proof the query is unverified: no snapshot,
// no integrity, unknown currency and completeness.
func TestOPS4UnverifiedWithoutProof(t *testing.T) {
	t.Parallel()
	b := setup(t, 4)
	c := b.completeness(t)
	require.Equal(t, readmodel.Unverified, c.VerificationState)
	require.Equal(t, readmodel.CurrencyUnknown, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompletenessUnknown, c.ProjectionCompleteness)
	require.Nil(t, c.CompletenessAsOf)
	require.Nil(t, c.Integrity)
	require.Equal(t, readmodel.ReasonNoCompletedSnapshot, c.VerificationReason)

	// No active projection pointer at all.
	bare := readmodel.New(dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All()}).Core())
	c, err := bare.Completeness(t.Context(), readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.Unverified, c.VerificationState)
	require.Equal(t, readmodel.ReasonNoActiveProjection, c.VerificationReason)
}

// OPS-4: a proof over a fully delivered source is complete and, while
// nothing changes, verified_current; a new event makes it stale with a
// determined gap (partial_source_gap), never complete; once the new event
// is applied the old proof stays stale (unknown) until a new proof.
func TestOPS4CompletenessVerifiedCurrentThenStale(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	b.admit(t, 3)
	b.deliverAll(t)

	proof, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.CompleteForSupportedScope, proof.ProjectionCompleteness)
	require.Empty(t, proof.Reasons)
	require.EqualValues(t, 6, proof.Inputs.SourceEvents.Count)
	require.EqualValues(t, 6, proof.Inputs.Receipts.Count)
	require.Zero(t, proof.Inputs.MissingReceipts)
	require.NotEmpty(t, proof.DatabaseSnapshot)

	c := b.completeness(t)
	require.Equal(t, readmodel.Verified, c.VerificationState)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompleteForSupportedScope, c.ProjectionCompleteness)
	require.Equal(t, proof.SnapshotID, c.CompletenessAsOf.SnapshotID)
	require.Equal(t, proof.Inputs, c.Integrity.Inputs)

	// A new admission lands: its events are open deliveries without receipts.
	b.admit(t, 1)
	c = b.completeness(t)
	require.Equal(t, readmodel.Verified, c.VerificationState)
	require.Equal(t, readmodel.Stale, c.SnapshotCurrency)
	require.Equal(t, readmodel.PartialSourceGap, c.ProjectionCompleteness, "stale is never complete")
	require.Contains(t, c.VerificationReason, "source_events")
	require.Equal(t, proof.SnapshotID, c.CompletenessAsOf.SnapshotID)

	// Applied, but the proof predates it: still stale, no determined gap.
	b.deliverAll(t)
	c = b.completeness(t)
	require.Equal(t, readmodel.Stale, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompletenessUnknown, c.ProjectionCompleteness)

	proof2, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.CompleteForSupportedScope, proof2.ProjectionCompleteness)
	c = b.completeness(t)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompleteForSupportedScope, c.ProjectionCompleteness)
	require.Equal(t, proof2.SnapshotID, c.CompletenessAsOf.SnapshotID)
}

// OPS-4: the periodic proof is addressed by its inputs' digest: an
// unchanged snapshot records nothing and returns the proof that still
// describes it; a change records a new proof.
func TestOPS4RecordCompletenessIsContentAddressed(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 4), t.Context()
	b.admit(t, 1)
	b.deliverAll(t)
	first, recorded, err := b.rm.RecordCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.True(t, recorded)
	require.Equal(t, readmodel.CompleteForSupportedScope, first.ProjectionCompleteness)
	again, recorded, err := b.rm.RecordCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.False(t, recorded)
	require.Equal(t, first.SnapshotRef, again.SnapshotRef)
	require.Equal(t, first.InputsFingerprint, again.InputsFingerprint)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM operations.completeness_proofs").Scan(&n))
	require.Equal(t, 1, n)

	b.admit(t, 1)
	second, recorded, err := b.rm.RecordCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.True(t, recorded)
	require.NotEqual(t, first.SnapshotID, second.SnapshotID)
	require.Equal(t, readmodel.PartialSourceGap, second.ProjectionCompleteness)
	c := b.completeness(t)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Equal(t, second.SnapshotID, c.CompletenessAsOf.SnapshotID)
}

// OPS-4: every condition of complete_for_supported_scope is checked: open
// mandatory deliveries, the receipt anti-join, unresolved gaps, unsupported
// schema, quarantine and the semantic check.
func TestOPS4ProofReasons(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("open deliveries and anti-join", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
		b.admit(t, 2)
		proof, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
		require.NoError(t, err)
		require.Equal(t, readmodel.PartialSourceGap, proof.ProjectionCompleteness)
		require.Equal(t, []string{readmodel.ReasonOpenDeliveries, readmodel.ReasonReceiptAntiJoin}, proof.Reasons)
		require.EqualValues(t, 4, proof.Inputs.MissingReceipts)
		c := b.completeness(t)
		require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
		require.Equal(t, readmodel.PartialSourceGap, c.ProjectionCompleteness)
	})

	t.Run("gap, unsupported schema and unlinked reservation", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
		o := operationstest.Sample(1)
		_, err := b.proj.Consume(ctx, operationstest.DeliveryV1(o.Finalization)) // gap
		require.Error(t, err)
		_, err = b.proj.Consume(ctx, operationstest.DeliveryV1(o.Wallet)) // wallet without its Run
		require.NoError(t, err)
		_, err = b.proj.Consume(ctx, operationstest.DeliveryV1(sample.Built(envelope.BillingLateCommandResultCommittedV1, 1)))
		require.Error(t, err) // not projected by this release
		proof, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
		require.NoError(t, err)
		require.Contains(t, proof.Reasons, readmodel.ReasonUnresolvedGaps)
		require.Contains(t, proof.Reasons, readmodel.ReasonSemanticCheckFailed)
		require.Contains(t, proof.Reasons, readmodel.ReasonUnsupportedSchema)
		require.EqualValues(t, 1, proof.Inputs.Semantic.PendingUnlinkedReservations)
		require.EqualValues(t, 1, proof.Inputs.Semantic.ReceiptsWithoutSource, "the wallet event is not in this outbox")
	})

	t.Run("quarantine in scope", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
		b.admit(t, 1)
		claims, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "test", Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, claims, 1)
		require.NoError(t, b.store.Quarantine(ctx, claims[0].Fence, "test_quarantine", "test", false))
		b.deliverAll(t)
		proof, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
		require.NoError(t, err)
		require.Contains(t, proof.Reasons, readmodel.ReasonQuarantined)
		require.NotContains(t, proof.Reasons, readmodel.ReasonOpenDeliveries)
	})

	// OPS-4/DS-8: the proof's delivery scope is the deliveries frozen to the
	// proved version; a delivery frozen to another version (open or
	// quarantined) is that version's concern. The source and the receipt
	// anti-join stay whole: every source event needs this version's receipt.
	t.Run("deliveries scoped to the frozen projection version", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
		b.admit(t, 1)
		claims, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "test", Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, claims, 1)
		require.NoError(t, b.store.Quarantine(ctx, claims[0].Fence, "test_quarantine", "test", false))
		v1, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
		require.NoError(t, err)
		require.Equal(t, []string{readmodel.ReasonOpenDeliveries, readmodel.ReasonQuarantined, readmodel.ReasonReceiptAntiJoin}, v1.Reasons)
		require.EqualValues(t, 2, v1.Inputs.MandatoryDeliveries.Count)

		v2, err := b.rm.ProveCompleteness(ctx, readmodel.Params{Projection: route.Required(projector.ProjectionName, 2)})
		require.NoError(t, err)
		require.Equal(t, []string{readmodel.ReasonReceiptAntiJoin}, v2.Reasons)
		require.EqualValues(t, 2, v2.Inputs.SourceEvents.Count)
		require.EqualValues(t, 2, v2.Inputs.MissingReceipts)
		require.Zero(t, v2.Inputs.MandatoryDeliveries.Count)
		require.Zero(t, v2.Inputs.OpenDeliveries)
		require.Zero(t, v2.Inputs.QuarantinedDeliveries)
	})

	t.Run("definition not comparable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, 4)
		_, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `INSERT INTO operations.completeness_proofs (snapshot_id, projection_name, projection_version,
			query_definition_version, evaluated_at, database_snapshot, projection_completeness, reasons, inputs, inputs_fingerprint)
			SELECT @snapshot_id::uuid, projection_name, projection_version, 'operations-completeness@0', evaluated_at + interval '1 second',
			       database_snapshot, projection_completeness, reasons, inputs, inputs_fingerprint
			  FROM operations.completeness_proofs`, pgx.NamedArgs{"snapshot_id": uuid.NewString()})
		require.NoError(t, err)
		c := b.completeness(t)
		require.Equal(t, readmodel.Unverified, c.VerificationState)
		require.Equal(t, readmodel.ReasonDefinitionMismatch, c.VerificationReason)
		require.Nil(t, c.CompletenessAsOf)
	})
}

// The read-model queries on admitted operations: summary by every exact
// identifier, timeline, no gaps, no unlinked reservations.
func TestReadModelQueriesOnAdmittedOperations(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 4), t.Context()
	res := b.admit(t, 2)
	b.deliverAll(t)
	r := res[0]
	for _, id := range []string{r.RunID, r.BillingReservationID, r.RunCreatedEventID, r.WalletReservedEventID, r.CorrelationID, r.AdmissionOperationID} {
		found, err := b.rm.Lookup(ctx, id, readmodel.Params{})
		require.NoError(t, err)
		require.Len(t, found.Matches, 1, id)
		s := found.Matches[0].Operation
		require.Equal(t, r.RunID, s.RunID)
		require.Equal(t, r.Manifest, s.RunAdmissionManifest)
		require.Equal(t, readmodel.ReservationReserved, s.Reservation.State)
		require.Equal(t, "100", s.Reservation.ReservedAmount)
		require.Equal(t, r.AdmissionOperationID, s.OperationID)
	}
	tl, err := b.rm.Timeline(ctx, r.RunID, readmodel.Params{})
	require.NoError(t, err)
	require.Len(t, tl, 2)
	gaps, err := b.rm.PendingGaps(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Empty(t, gaps)
	pending, err := b.rm.PendingUnlinkedReservations(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Empty(t, pending)
	_, err = b.rm.Lookup(ctx, "not-a-uuid", readmodel.Params{})
	require.ErrorIs(t, err, readmodel.ErrInvalidIdentifier)
}
