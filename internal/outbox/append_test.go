package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// OB-APPEND-1: one event in the caller's transaction freezes the active
// definition quadruple, stores the canonical envelope and its contracts
// digest, and creates exactly one pending delivery per mandatory member with
// the member's frozen expectations. Runs as the producer role: the grants
// suffice.
func TestAppendFreezesDefinitionAndCreatesMandatoryDeliveries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := freshSample(envelope.BillingFinalizationResolutionAppliedV1) // two mandatory members

	var res outbox.AppendResult
	err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleProducer)
		var err error
		res, err = release.AppendTx(ctx, tx, ev)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, b.def.Quadruple(), res.Definition)
	require.Len(t, res.Events, 1)
	require.Equal(t, ev.EventID, res.Events[0].EventID)

	var (
		quad                 deliveryset.Quadruple
		alg                  string
		envText, sha, shaAlg string
		payloadMatches       bool
		published            *string
	)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT delivery_set_version, delivery_set_definition_schema_version,
		delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
		event_envelope, event_envelope_digest_algorithm_version, event_envelope_sha256,
		event_payload = (event_envelope::jsonb -> 'payload'), published_at::text
		FROM outbox.outbox_events WHERE event_id = $1`, ev.EventID).Scan(
		&quad.DeliverySetVersion, &quad.DeliverySetDefinitionSchemaVersion, &alg, &quad.DeliverySetDefinitionDigest,
		&envText, &shaAlg, &sha, &payloadMatches, &published))
	quad.DeliverySetDefinitionDigestAlgorithmVersion = digest.Algorithm(alg)
	require.Equal(t, b.def.Quadruple(), quad, "definition quadruple frozen on the event row")
	require.True(t, payloadMatches)
	require.Nil(t, published)

	// The stored envelope re-decodes strictly and re-digests to the stored digest.
	stored, err := envelope.DecodeEnvelope([]byte(envText))
	require.NoError(t, err)
	require.NoError(t, stored.VerifyDigest(digest.Digest{Algorithm: digest.Algorithm(shaAlg), Value: sha}))
	want, err := envelope.Build(ev)
	require.NoError(t, err)
	wantDigest, err := want.Digest()
	require.NoError(t, err)
	require.Equal(t, wantDigest.Value, sha)
	require.Equal(t, wantDigest, res.Events[0].EnvelopeDigest)

	rows, err := b.pool.Query(ctx, `SELECT destination, consumer_name, expected_receipt_type, expected_receipt_schema_version,
		coalesce(required_projection_name, ''), coalesce(required_projection_version, 0), mandatory, status, attempt_count,
		delivery_set_version
		FROM outbox.outbox_deliveries WHERE event_id = $1 ORDER BY destination`, ev.EventID)
	require.NoError(t, err)
	type row struct {
		Dest, Consumer, RType, RSchema, PName string
		PVersion                              int64
		Mandatory                             bool
		Status                                string
		Attempts                              int
		DSV                                   int64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	require.Equal(t, []row{
		{"billing_finalization_coordinator", route.BillingFinalizationCoordinatorConsumer, route.BillingFinalizationCoordinatorConsumerReceipt, "1", "", 0, true, "pending", 0, 1},
		{"core_operations", route.OperationsProjector, route.OperationsProjectionAppliedReceipt, "1", projection, 1, true, "pending", 0, 1},
	}, got)
}

// OB-APPEND-1, DS-7: every pair of the first full release appends, with
// exactly its mandatory members: 13 events, 14 delivery rows.
func TestAppendAllFirstReleasePairs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	var evs []envelope.Envelope
	for eventType := range deliveryset.FirstReleaseRoutes {
		evs = append(evs, freshSample(eventType))
	}
	res := appendTx(t, b.pool, evs...)
	require.Len(t, res.Events, 13)
	total := 0
	for _, e := range res.Events {
		require.Len(t, e.Deliveries, len(deliveryset.FirstReleaseRoutes[e.EventType]), e.EventType)
		total += len(e.Deliveries)
	}
	require.Equal(t, 14, total)
	rows, _ := b.pool.Query(ctx, `SELECT (SELECT count(*) FROM outbox.outbox_events) AS events, (SELECT count(*) FROM outbox.outbox_deliveries) AS deliveries`)
	counts, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[struct{ Events, Deliveries int }])
	require.NoError(t, err)
	require.Equal(t, 13, counts.Events)
	require.Equal(t, 14, counts.Deliveries)
}

// OB-APPEND-3: ids are allocated before the envelopes are built, so
// causation can point inside the transaction; each event gets its own
// digest and its own delivery rows; an event without an id gets one.
func TestAppendSeveralEventsAllocatesIDsFirst(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ids := outbox.NewEventIDs(2)
	fin := freshSample(envelope.BillingFinalizationCommittedV1)
	fin.EventID = ids[0]
	tr := freshSample(envelope.BillingSettlementTransitionCommittedV1)
	tr.EventID = ids[1]
	tr.CausationID = ids[0]
	third := freshSample(envelope.BillingLateExposureCaseRequestedV1)
	third.EventID = ""
	third.CausationID = ids[1]

	res := appendTx(t, b.pool, fin, tr, third)
	require.Len(t, res.Events, 3)
	require.Equal(t, ids[0], res.Events[0].EventID)
	require.Equal(t, ids[1], res.Events[1].EventID)
	allocated, err := uuid.Parse(res.Events[2].EventID)
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), allocated.Version())

	digests := map[string]bool{}
	for _, e := range res.Events {
		digests[e.EnvelopeDigest.Value] = true
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM outbox.outbox_deliveries WHERE event_id = $1", e.EventID).Scan(&n))
		require.Equal(t, 1, n, "each event has its own delivery row")
	}
	require.Len(t, digests, 3, "each event has its own digest")
	var causation string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT causation_id FROM outbox.outbox_events WHERE event_id = $1", ids[1]).Scan(&causation))
	require.Equal(t, ids[0], causation)
}

// OB-APPEND-4: an unknown or aliased pair fails validation and the
// caller's domain transaction rolls back with it.
func TestAppendRejectsUnknownPairAndRollsBackDomainTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	for _, alias := range []struct{ eventType, schemaVersion string }{
		{"run.created", "2.0"}, // no version suffix
		{"run.created@2", "2"}, // alias of 2.0
		{"run.created@latest", "latest"},
		{"run.*", "2.0"},
		{"run.created@2.0", "2"}, // schema version differs from the suffix
	} {
		ev := freshSample(envelope.RunCreatedV2)
		ev.EventType, ev.EventSchemaVersion = alias.eventType, alias.schemaVersion
		err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
			// A domain write that must not survive the failed append.
			if _, err := tx.Exec(ctx, "INSERT INTO outbox.projection_versions (projection_name, projection_version) VALUES ('domain_write', 1)"); err != nil {
				return err
			}
			_, err := release.AppendTx(ctx, tx, ev)
			return err
		})
		require.ErrorIs(t, err, outbox.ErrInvalidEnvelope, alias.eventType)
		require.ErrorIs(t, err, envelope.ErrUnknownEventPair, alias.eventType)
		var inv *outbox.InvalidEnvelopeError
		require.ErrorAs(t, err, &inv)
	}
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM outbox.projection_versions WHERE projection_name = 'domain_write') + (SELECT count(*) FROM outbox.outbox_events)").Scan(&n))
	require.Zero(t, n)

	// A payload that breaks its pair's contract is rejected the same way.
	bad := freshSample(envelope.RunCreatedV2)
	bad.AggregateRevision = 7
	_, err := db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, bad)
	})
	require.ErrorIs(t, err, outbox.ErrInvalidEnvelope)
	require.ErrorIs(t, err, envelope.ErrAggregateMismatch)
}

// registerActivate registers def (projection operations/1 is ready) and
// activates it.
func registerActivate(t *testing.T, b *testBundle, def *deliveryset.Definition) {
	t.Helper()
	ctx := t.Context()
	_, err := outbox.Register(ctx, b.pool, def, outbox.RegisterOpts{SourceRelease: "test"})
	require.NoError(t, err)
	_, err = outbox.Activate(ctx, b.pool, def.Version)
	require.NoError(t, err)
}

// withoutPair returns the first release under version v without eventType.
func withoutPair(t *testing.T, v int64, eventType string) *deliveryset.Definition {
	t.Helper()
	d, err := deliveryset.Build(v, projection, 1)
	require.NoError(t, err)
	var evs []deliveryset.EventKey
	for _, e := range d.ApplicableEvents {
		if e.EventType != eventType {
			evs = append(evs, e)
		}
	}
	var ms []route.Member
	for _, m := range d.Members {
		if m.EventType != eventType {
			ms = append(ms, m)
		}
	}
	d.ApplicableEvents, d.Members = evs, ms
	require.NoError(t, d.Seal())
	return d
}

// DS-9, OB-APPEND-4: the writer proves in its own database that the active
// definition has the exact pair and all its mandatory members; otherwise
// the domain transaction fails before anything is written.
func TestAppendProvesPairAndMembersInActiveDefinition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("no active definition", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway}}).Gateway()
		_, err := db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
			return release.AppendTx(ctx, tx, freshSample(envelope.GatewayAvailabilityCurrentChangedV1))
		})
		require.ErrorIs(t, err, outbox.ErrNoActiveDefinition)
	})

	t.Run("pair missing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		registerActivate(t, b, withoutPair(t, 2, envelope.GatewayAvailabilityCurrentChangedV1))
		_, err := db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
			return release.AppendTx(ctx, tx, freshSample(envelope.GatewayAvailabilityCurrentChangedV1))
		})
		require.ErrorIs(t, err, outbox.ErrPairNotInDefinition)
		require.ErrorIs(t, err, deliveryset.ErrPairNotApplicable)
		var pe *outbox.PairNotInDefinitionError
		require.ErrorAs(t, err, &pe)
		require.EqualValues(t, 2, pe.Definition.DeliverySetVersion)
		// Other pairs still append against the new definition.
		res := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2))
		require.EqualValues(t, 2, res.Definition.DeliverySetVersion)
	})

	t.Run("mandatory member missing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d, err := deliveryset.Build(3, projection, 1)
		require.NoError(t, err)
		var ms []route.Member
		for _, m := range d.Members {
			if m.EventType == envelope.BillingFinalizationResolutionAppliedV1 && m.Destination == route.CoreOperations {
				continue // drop one of the pair's two mandatory members
			}
			ms = append(ms, m)
		}
		d.Members = ms
		require.NoError(t, d.Seal())
		registerActivate(t, b, d)
		_, err = db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
			return release.AppendTx(ctx, tx, freshSample(envelope.BillingFinalizationResolutionAppliedV1))
		})
		require.ErrorIs(t, err, outbox.ErrMemberMissing)
		var me *outbox.MemberMissingError
		require.ErrorAs(t, err, &me)
		require.Equal(t, string(route.CoreOperations), me.Destination)
	})
}

// Duplicate event ids are rejected in one append and across appends.
func TestAppendRejectsDuplicateEventIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := freshSample(envelope.RunCreatedV2)
	_, err := db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, ev, ev)
	})
	require.ErrorIs(t, err, outbox.ErrDuplicateEventID)

	appendTx(t, b.pool, ev)
	_, err = db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, ev)
	})
	require.ErrorIs(t, err, outbox.ErrDuplicateEventID)
	require.Equal(t, pgerrcode.UniqueViolation, db.SQLState(err))
}

// An append with no events is a no-op.
func TestAppendNothing(t *testing.T) {
	t.Parallel()
	res, err := release.AppendTx(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, res.Events)
	require.False(t, errors.Is(err, outbox.ErrNoActiveDefinition))
}
