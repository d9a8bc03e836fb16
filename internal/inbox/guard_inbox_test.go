package inbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
)

// The inbox's insert-or-compare (CON-1, issue 37): the Go checks that
// refuse to store a second receipt for a key or to answer a delivery with a
// stored receipt that is not its own. Each test names its clause; `go run
// ./scripts/guards mutate -run CON-1` disables each in turn.

// guardConsumer is a Consumer whose only answer the checks read is its
// destination.
type guardConsumer struct{ dest route.Destination }

func (c guardConsumer) Destination() route.Destination { return c.dest }
func (c guardConsumer) Receipts() *Table               { return nil }
func (c guardConsumer) ReceiptKey(*Event) (Key, error) { return Key{}, nil }
func (c guardConsumer) ApplyTx(context.Context, pgx.Tx, *Event) (Outcome, error) {
	return Outcome{}, nil
}

func guardInbox(t *testing.T, dest route.Destination) *Inbox {
	t.Helper()
	in, err := New(nil, guardConsumer{dest: dest}, Config{})
	require.NoError(t, err)
	return in
}

func hexDigest(c string) digest.Digest {
	return digest.Digest{Algorithm: "jcs-sha256-v1", Value: strings.Repeat(c, 64)}
}

// CON-1, clause CON-1.event-digest-conflict: a stored receipt of the event
// id under another envelope digest is never replayed (non-retryable
// ErrEventDigestConflict), whatever the stored body.
func TestGuard_CON1_ReplayRefusesAnotherEnvelopeDigest(t *testing.T) {
	t.Parallel()
	in := guardInbox(t, route.CoreOperations)
	ev := &Event{Delivery: transport.Delivery{EventID: uuid.NewString(), EnvelopeDigest: hexDigest("a")}}
	_, err := in.replay(ev, Stored{EnvelopeDigest: hexDigest("b"), Body: []byte(`{}`)})
	require.ErrorIs(t, err, ErrEventDigestConflict) // CON-1.event-digest-conflict
}

// CON-1, clause CON-1.stored-receipt-differs: a stored receipt whose body
// decodes and verifies but whose columns (here its ref) differ from the
// body is not replayed (non-retryable ErrStoredReceiptInvalid); the same
// row with matching columns is.
func TestGuard_CON1_ReplayRefusesColumnsThatDifferFromTheBody(t *testing.T) {
	t.Parallel()
	in := guardInbox(t, route.CoreOperations)
	d := transport.Delivery{EventID: uuid.NewString(), EventType: "run.created", EventSchemaVersion: "2.0", EnvelopeDigest: hexDigest("a")}
	r, err := receipt.NewOperationsProjectionAppliedReceipt("receipt-guard", route.Required("operations", 1),
		receipt.EventFacts{EventID: d.EventID, EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion, EnvelopeDigest: d.EnvelopeDigest},
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	require.NoError(t, err)
	body, err := jcs.Marshal(r.ToJSON())
	require.NoError(t, err)
	ev := &Event{Delivery: d}
	s := Stored{EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion, EnvelopeDigest: d.EnvelopeDigest,
		Receipt: r.ReceiptQuadruple(), Body: body}
	_, err = in.replay(ev, s)
	require.NoError(t, err, "the row as stored replays")

	s.Receipt = strict.Quadruple{Ref: "another-receipt", SchemaVersion: s.Receipt.SchemaVersion,
		DigestAlgorithmVersion: s.Receipt.DigestAlgorithmVersion, Digest: s.Receipt.Digest}
	_, err = in.replay(ev, s)
	require.ErrorIs(t, err, ErrStoredReceiptInvalid) // CON-1.stored-receipt-differs
}

// CON-1, clause CON-1.receipt-exists: a second receipt for a key that has
// one is refused (ON CONFLICT DO NOTHING answers no row), never reported
// stored; the first stays. As the Metering runtime role, on its receipt
// table.
func TestGuard_CON1_SecondReceiptForAKeyIsRefused(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}}).Metering()
	table := NewTable("metering", "input_receipts", false)
	key := Key{ConsumerName: "metering_input_processor_consumer", EventID: uuid.NewString(), Projection: route.NotApplicable}
	stored := func(ref string) Stored {
		return Stored{EventType: "execution.attempt-eligibility.finalized@1", EventSchemaVersion: "1", EnvelopeDigest: hexDigest("a"),
			Receipt: strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: "jcs-sha256-v1", Digest: strings.Repeat("b", 64)},
			Body:    []byte(`{"ref":"` + ref + `"}`)}
	}
	insert := func(ref string) error {
		return db.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+meteringschema.RoleMetering); err != nil {
				return err
			}
			return table.InsertTx(ctx, tx, key, stored(ref))
		})
	}
	require.NoError(t, insert("receipt-first"))
	require.ErrorIs(t, insert("receipt-second"), errReceiptExists) // CON-1.receipt-exists
	got, err := table.LookupTx(t.Context(), pool, key)
	require.NoError(t, err)
	require.Equal(t, "receipt-first", got.Receipt.Ref)
}
