package inbox

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the inbox's SQL, on the shared loader: the receipt
// statements name the consumer's table, which only NewTable knows, so sqlc
// cannot generate them.
var statements = db.MustLoadStatements("inbox", sqlFiles, "sql")

var (
	qBegin    = statements.Get("begin")
	qTimeouts = statements.Get("timeouts")
)

// tablePlaceholder stands for the receipt table in the receipt statements.
const tablePlaceholder = "{table}"

// Key identifies a receipt: (consumerName, eventId), plus the frozen
// projection target for projection consumers (CON-1). A receipt of one
// projection version never answers a delivery for another.
type Key struct {
	ConsumerName string
	EventID      string
	Projection   route.ProjectionTarget // route.NotApplicable for non-projection consumers
}

// lockKey is the text the transaction-scoped advisory lock hashes.
func (k Key) lockKey() string {
	if !k.Projection.Required {
		return "inbox|" + k.ConsumerName + "|" + k.EventID
	}
	return fmt.Sprintf("inbox|%s|%s|%d|%s", k.ConsumerName, k.Projection.Name, k.Projection.Version, k.EventID)
}

// Stored is one receipt row.
type Stored struct {
	EventType          string
	EventSchemaVersion string
	EnvelopeDigest     digest.Digest
	Receipt            strict.Quadruple
	// Body is the receipt's RFC 8785 canonical JSON, returned verbatim.
	Body []byte
}

// Table is a consumer's receipt table. Its standard columns are
//
//	consumer_name text, event_id uuid,
//	[projection_name text, projection_version bigint,]   -- projection consumers
//	event_type text, event_schema_version text,
//	event_envelope_digest_algorithm_version text, event_envelope_sha256 text,
//	receipt_ref text, receipt_schema_version text,
//	receipt_digest_algorithm_version text, receipt_digest text,
//	receipt_body text, recorded_at timestamptz DEFAULT now()
//
// with the key as primary key. The owning module's migration line creates
// it (and should make it insert-only).
type Table struct {
	lookup, insert string
	projection     bool
}

// NewTable describes the receipt table schema.name. projection says whether
// the key includes the projection target.
func NewTable(schema, name string, projection bool) *Table {
	lookup, insert := "receipt_lookup", "receipt_insert"
	if projection {
		lookup, insert = lookup+"_projection", insert+"_projection"
	}
	r := strings.NewReplacer(tablePlaceholder, pgx.Identifier{schema, name}.Sanitize())
	return &Table{lookup: r.Replace(statements.Get(lookup)), insert: r.Replace(statements.Get(insert)), projection: projection}
}

// keyArgs are the named arguments of k's key columns.
func (t *Table) keyArgs(k Key) (pgx.NamedArgs, error) {
	if k.Projection.Required != t.projection {
		return nil, fmt.Errorf("inbox: receipt key projection %+v does not fit the table", k.Projection)
	}
	args := pgx.NamedArgs{"consumer_name": k.ConsumerName, "event_id": k.EventID}
	if t.projection {
		args["projection_name"], args["projection_version"] = k.Projection.Name, k.Projection.Version
	}
	return args, nil
}

// receiptRow is a receipt row as the lookup returns it.
type receiptRow struct {
	EventType                           string `db:"event_type"`
	EventSchemaVersion                  string `db:"event_schema_version"`
	EventEnvelopeDigestAlgorithmVersion string `db:"event_envelope_digest_algorithm_version"`
	EventEnvelopeSHA256                 string `db:"event_envelope_sha256"`
	ReceiptRef                          string `db:"receipt_ref"`
	ReceiptSchemaVersion                string `db:"receipt_schema_version"`
	ReceiptDigestAlgorithmVersion       string `db:"receipt_digest_algorithm_version"`
	ReceiptDigest                       string `db:"receipt_digest"`
	ReceiptBody                         string `db:"receipt_body"`
}

// LookupTx returns the stored receipt of k, or db.ErrNotFound.
func (t *Table) LookupTx(ctx context.Context, q db.Executor, k Key) (Stored, error) {
	args, err := t.keyArgs(k)
	if err != nil {
		return Stored{}, err
	}
	rows, err := q.Query(ctx, t.lookup, args)
	if err != nil {
		return Stored{}, err
	}
	r, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[receiptRow])
	if err != nil {
		return Stored{}, db.NotFound(err)
	}
	return Stored{
		EventType: r.EventType, EventSchemaVersion: r.EventSchemaVersion,
		EnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(r.EventEnvelopeDigestAlgorithmVersion), Value: r.EventEnvelopeSHA256},
		Receipt: strict.Quadruple{Ref: r.ReceiptRef, SchemaVersion: r.ReceiptSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.ReceiptDigestAlgorithmVersion), Digest: r.ReceiptDigest},
		Body: []byte(r.ReceiptBody),
	}, nil
}

// errReceiptExists is returned by InsertTx when the key already has a row.
var errReceiptExists = errors.New("inbox: receipt already stored for the key")

// InsertTx inserts the receipt of k.
func (t *Table) InsertTx(ctx context.Context, q db.Executor, k Key, s Stored) error {
	args, err := t.keyArgs(k)
	if err != nil {
		return err
	}
	args["event_type"], args["event_schema_version"] = s.EventType, s.EventSchemaVersion
	args["event_envelope_digest_algorithm_version"] = string(s.EnvelopeDigest.Algorithm)
	args["event_envelope_sha256"] = s.EnvelopeDigest.Value
	args["receipt_ref"], args["receipt_schema_version"] = s.Receipt.Ref, s.Receipt.SchemaVersion
	args["receipt_digest_algorithm_version"] = string(s.Receipt.DigestAlgorithmVersion)
	args["receipt_digest"], args["receipt_body"] = s.Receipt.Digest, string(s.Body)
	rows, err := q.Query(ctx, t.insert, args)
	if err != nil {
		return err
	}
	if _, err := pgx.CollectOneRow(rows, pgx.RowTo[string]); err != nil {
		// guard CON-1.receipt-exists
		if errors.Is(err, pgx.ErrNoRows) {
			return errReceiptExists
		}
		return err
	}
	return nil
}
