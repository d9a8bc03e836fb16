package outbox_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
)

// The read views of migration 00090 are the only outbox state other lines
// read (Operations, the admin). These tests pin each view's columns (name
// and type, in order) and one row's content, so a change of an outbox table
// or view that a reader would notice fails here, in the outbox package,
// and never in a reader in production.

// viewColumns lists a view's columns as "name type", in order.
func viewColumns(t *testing.T, pool *pgxpool.Pool, view string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT column_name || ' ' || data_type FROM information_schema.columns
		WHERE table_schema = 'outbox' AND table_name = @view ORDER BY ordinal_position`, pgx.NamedArgs{"view": view})
	require.NoError(t, err)
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return cols
}

// viewRow reads the one row of a view matching where, every column by name
// into T (pgx fails on a column T lacks or a field the row lacks).
func viewRow[T any](t *testing.T, pool *pgxpool.Pool, view, where string, args pgx.NamedArgs) T {
	t.Helper()
	rows, err := pool.Query(t.Context(), "SELECT * FROM outbox."+view+" WHERE "+where, args)
	require.NoError(t, err)
	row, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	require.NoError(t, err)
	return row
}

func TestReadViewDeliveryFacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, []string{
		"event_id uuid",
		"destination text",
		"consumer_name text",
		"mandatory boolean",
		"status text",
		"required_projection_name text",
		"required_projection_version bigint",
		"ack_receipt_key text",
		"ack_receipt_digest text",
		"event_type text",
		"event_schema_version text",
		"event_envelope_digest_algorithm_version text",
		"event_envelope_sha256 text",
	}, viewColumns(t, b.pool, "delivery_facts"))

	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	require.NotEmpty(t, ev.Deliveries)
	m := ev.Deliveries[0]
	type deliveryFact struct {
		EventID                             string  `db:"event_id"`
		Destination                         string  `db:"destination"`
		ConsumerName                        string  `db:"consumer_name"`
		Mandatory                           bool    `db:"mandatory"`
		Status                              string  `db:"status"`
		RequiredProjectionName              *string `db:"required_projection_name"`
		RequiredProjectionVersion           *int64  `db:"required_projection_version"`
		AckReceiptKey                       *string `db:"ack_receipt_key"`
		AckReceiptDigest                    *string `db:"ack_receipt_digest"`
		EventType                           string  `db:"event_type"`
		EventSchemaVersion                  string  `db:"event_schema_version"`
		EventEnvelopeDigestAlgorithmVersion string  `db:"event_envelope_digest_algorithm_version"`
		EventEnvelopeSHA256                 string  `db:"event_envelope_sha256"`
	}
	want := deliveryFact{
		EventID: ev.EventID, Destination: string(m.Destination), ConsumerName: m.ConsumerName, Mandatory: true,
		Status: "pending", EventType: ev.EventType, EventSchemaVersion: ev.EventSchemaVersion,
		EventEnvelopeDigestAlgorithmVersion: string(ev.EnvelopeDigest.Algorithm), EventEnvelopeSHA256: ev.EnvelopeDigest.Value,
	}
	if m.ProjectionTarget.Required {
		want.RequiredProjectionName, want.RequiredProjectionVersion = &m.ProjectionTarget.Name, &m.ProjectionTarget.Version
	}
	require.Equal(t, want, viewRow[deliveryFact](t, b.pool, "delivery_facts", "event_id = @id AND destination = @destination",
		pgx.NamedArgs{"id": ev.EventID, "destination": string(m.Destination)}))
}

func TestReadViewEventFrozenMembers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, []string{
		"event_id uuid",
		"event_type text",
		"event_schema_version text",
		"event_envelope_digest_algorithm_version text",
		"event_envelope_sha256 text",
		"delivery_set_version bigint",
		"delivery_set_definition_schema_version text",
		"delivery_set_definition_digest_algorithm_version text",
		"delivery_set_definition_digest text",
		"destination text",
		"consumer_name text",
		"expected_receipt_type text",
		"expected_receipt_schema_version text",
		"mandatory boolean",
		"projection_name text",
		"projection_version bigint",
		"delivery_projection_name text",
		"delivery_projection_version bigint",
	}, viewColumns(t, b.pool, "event_frozen_members"))

	res := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2))
	ev := res.Events[0]
	require.NotEmpty(t, ev.Deliveries)
	m := ev.Deliveries[0]
	type frozenMember struct {
		EventID                                     string  `db:"event_id"`
		EventType                                   string  `db:"event_type"`
		EventSchemaVersion                          string  `db:"event_schema_version"`
		EventEnvelopeDigestAlgorithmVersion         string  `db:"event_envelope_digest_algorithm_version"`
		EventEnvelopeSHA256                         string  `db:"event_envelope_sha256"`
		DeliverySetVersion                          int64   `db:"delivery_set_version"`
		DeliverySetDefinitionSchemaVersion          string  `db:"delivery_set_definition_schema_version"`
		DeliverySetDefinitionDigestAlgorithmVersion string  `db:"delivery_set_definition_digest_algorithm_version"`
		DeliverySetDefinitionDigest                 string  `db:"delivery_set_definition_digest"`
		Destination                                 string  `db:"destination"`
		ConsumerName                                string  `db:"consumer_name"`
		ExpectedReceiptType                         string  `db:"expected_receipt_type"`
		ExpectedReceiptSchemaVersion                string  `db:"expected_receipt_schema_version"`
		Mandatory                                   bool    `db:"mandatory"`
		ProjectionName                              *string `db:"projection_name"`
		ProjectionVersion                           *int64  `db:"projection_version"`
		DeliveryProjectionName                      *string `db:"delivery_projection_name"`
		DeliveryProjectionVersion                   *int64  `db:"delivery_projection_version"`
	}
	q := res.Definition
	want := frozenMember{
		EventID: ev.EventID, EventType: ev.EventType, EventSchemaVersion: ev.EventSchemaVersion,
		EventEnvelopeDigestAlgorithmVersion: string(ev.EnvelopeDigest.Algorithm), EventEnvelopeSHA256: ev.EnvelopeDigest.Value,
		DeliverySetVersion: q.DeliverySetVersion, DeliverySetDefinitionSchemaVersion: q.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: string(q.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 q.DeliverySetDefinitionDigest,
		Destination:                                 string(m.Destination), ConsumerName: m.ConsumerName,
		ExpectedReceiptType: m.ExpectedReceiptType, ExpectedReceiptSchemaVersion: m.ExpectedReceiptSchemaVersion,
		Mandatory: m.Mandatory,
	}
	if m.ProjectionTarget.Required {
		want.ProjectionName, want.ProjectionVersion = &m.ProjectionTarget.Name, &m.ProjectionTarget.Version
		// The delivery row carries the member's projection (a mandatory member has one).
		want.DeliveryProjectionName, want.DeliveryProjectionVersion = &m.ProjectionTarget.Name, &m.ProjectionTarget.Version
	}
	require.Equal(t, want, viewRow[frozenMember](t, b.pool, "event_frozen_members", "event_id = @id AND destination = @destination",
		pgx.NamedArgs{"id": ev.EventID, "destination": string(m.Destination)}))
}

func TestReadViewActiveProjections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, []string{
		"projection_name text",
		"projection_version bigint",
		"delivery_set_version bigint",
		"switched_at timestamp with time zone",
	}, viewColumns(t, b.pool, "active_projections"))

	type activeProjection struct {
		ProjectionName     string    `db:"projection_name"`
		ProjectionVersion  int64     `db:"projection_version"`
		DeliverySetVersion int64     `db:"delivery_set_version"`
		SwitchedAt         time.Time `db:"switched_at"`
	}
	got := viewRow[activeProjection](t, b.pool, "active_projections", "projection_name = @name", pgx.NamedArgs{"name": projection})
	require.False(t, got.SwitchedAt.IsZero())
	got.SwitchedAt = time.Time{}
	require.Equal(t, activeProjection{ProjectionName: projection, ProjectionVersion: 1, DeliverySetVersion: b.def.Quadruple().DeliverySetVersion}, got)
}
