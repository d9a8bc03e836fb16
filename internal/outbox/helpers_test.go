package outbox_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

const (
	projection = "operations"
)

type testBundle struct {
	pool *pgxpool.Pool
	def  *deliveryset.Definition
}

// setup gives a test its own migrated core database with the first full
// release (projection operations/1) registered and active.
func setup(t testing.TB) *testBundle {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}}).Core()
	def, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{
		ProjectionName: projection, ProjectionVersion: 1, SourceRelease: "test",
	})
	require.NoError(t, err)
	return &testBundle{pool: pool, def: def}
}

// bindDestinations seeds the release's destination bindings into a fresh
// database (what release.Bootstrap does before it registers).
func bindDestinations(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := db.WithTxV(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		return outbox.BindDestinationsTx(ctx, tx, release.Bindings()...)
	})
	require.NoError(t, err)
}

// freshSample returns a valid envelope of the pair with a fresh event id.
func freshSample(eventType string) envelope.Envelope {
	e := sample.Envelope(eventType, 0)
	e.EventID = outbox.NewEventID()
	return e
}

func appendTx(t *testing.T, pool *pgxpool.Pool, events ...envelope.Envelope) outbox.AppendResult {
	t.Helper()
	res, err := db.WithTxV(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, events...)
	})
	require.NoError(t, err)
	return res
}

// exec runs statements in one transaction and returns the first error
// (from a statement or from COMMIT).
func exec(ctx context.Context, pool *pgxpool.Pool, stmts ...string) error {
	return db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// attempt is one simulated dispatcher attempt.
type attempt struct {
	ID    string
	Token string
}

// claim does what a dispatcher claim does for one delivery (as the
// dispatcher role): insert the attempt start and lease the delivery (the
// transition guard, OW019, wants the start by the end of the leasing
// statement).
func claim(t *testing.T, ctx context.Context, tx pgx.Tx, eventID string, dest route.Destination) attempt {
	t.Helper()
	a := attempt{ID: uuid.NewString(), Token: uuid.NewString()}
	_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token)
		VALUES ($1, $2, $3, $4)`, a.ID, string(dest), eventID, a.Token)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE outbox.outbox_deliveries
		SET status = 'leased', lease_owner = 'test-worker', lease_token = $3, lease_expires_at = now() + interval '1 minute',
		    current_attempt_id = $4, attempt_count = attempt_count + 1, last_attempt_at = now()
		WHERE event_id = $1 AND destination = $2`, eventID, string(dest), a.Token, a.ID)
	require.NoError(t, err)
	return a
}

// ack is one simulated ack: finish + acknowledged delivery with the frozen
// receipt coordinates.
type ack struct {
	EventID       string
	Destination   route.Destination
	Attempt       attempt
	ReceiptRef    string
	ReceiptDigest string
	EnvelopeSHA   string
}

func (a ack) member(t *testing.T) route.Binding {
	b, err := route.BindingOf(a.Destination)
	require.NoError(t, err)
	return b
}

func (a ack) write(t *testing.T, ctx context.Context, tx pgx.Tx) {
	t.Helper()
	b := a.member(t)
	_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
		VALUES ($1, 'acknowledged', 'none')`, a.Attempt.ID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE outbox.outbox_deliveries
		SET status = 'acknowledged', delivered_at = now(), ack_consumer_name = $3, ack_receipt_type = $4,
		    ack_receipt_key = $5, ack_receipt_schema_version = $6, ack_receipt_digest_algorithm_version = 'jcs-sha256-v1',
		    ack_receipt_digest = $7, ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1',
		    ack_event_envelope_sha256 = $8
		WHERE event_id = $1 AND destination = $2`,
		a.EventID, string(a.Destination), b.ConsumerName, b.ReceiptType, a.ReceiptRef, b.ReceiptSchemaVersion, a.ReceiptDigest, a.EnvelopeSHA)
	require.NoError(t, err)
}

func (a ack) params(t *testing.T) outbox.PublicationParams {
	b := a.member(t)
	p := outbox.PublicationParams{
		EventID: a.EventID, Destination: a.Destination, ConsumerName: b.ConsumerName,
		AttemptID: a.Attempt.ID, LeaseToken: a.Attempt.Token, ReceiptType: b.ReceiptType,
	}
	p.Receipt.Ref, p.Receipt.SchemaVersion = a.ReceiptRef, b.ReceiptSchemaVersion
	p.Receipt.DigestAlgorithmVersion, p.Receipt.Digest = "jcs-sha256-v1", a.ReceiptDigest
	p.EventEnvelopeDigest.Algorithm, p.EventEnvelopeDigest.Value = "jcs-sha256-v1", a.EnvelopeSHA
	return p
}

func setRole(t *testing.T, ctx context.Context, tx pgx.Tx, role string) {
	t.Helper()
	_, err := tx.Exec(ctx, "SET LOCAL ROLE "+role)
	require.NoError(t, err)
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, db.SQLState(err), "error: %v", err)
}
