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
var queries embed.FS

func query(name string) string {
	b, err := queries.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("inbox: missing query " + name)
	}
	return strings.TrimSpace(string(b))
}

var (
	qBegin         = query("begin")
	qTimeouts      = query("timeouts")
	qReceiptLookup = query("receipt_lookup")
	qReceiptInsert = query("receipt_insert")
)

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
	ident := pgx.Identifier{schema, name}.Sanitize()
	pairs := []string{"{{table}}", ident,
		"{{projection}}", "", "{{projection_args}}", "", "{{projection_insert_args}}", "",
		"{{projection_columns}}", "", "{{projection_values}}", ""}
	if projection {
		pairs = []string{"{{table}}", ident,
			"{{projection}}", " AND projection_name = $3 AND projection_version = $4",
			"{{projection_args}}", ", $3 projection name, $4 projection version",
			"{{projection_insert_args}}", ", $12 projection name, $13 projection version",
			"{{projection_columns}}", ", projection_name, projection_version",
			"{{projection_values}}", ", $12, $13"}
	}
	r := strings.NewReplacer(pairs...)
	return &Table{lookup: r.Replace(qReceiptLookup), insert: r.Replace(qReceiptInsert), projection: projection}
}

func (t *Table) keyArgs(k Key) ([]any, error) {
	if k.Projection.Required != t.projection {
		return nil, fmt.Errorf("inbox: receipt key projection %+v does not fit the table", k.Projection)
	}
	args := []any{k.ConsumerName, k.EventID}
	if t.projection {
		args = append(args, k.Projection.Name, k.Projection.Version)
	}
	return args, nil
}

// LookupTx returns the stored receipt of k, or db.ErrNotFound.
func (t *Table) LookupTx(ctx context.Context, q db.Executor, k Key) (Stored, error) {
	args, err := t.keyArgs(k)
	if err != nil {
		return Stored{}, err
	}
	var (
		s                 Stored
		envAlg, recAlg    string
		body              string
		receiptSchemaText string
	)
	err = q.QueryRow(ctx, t.lookup, args...).Scan(&s.EventType, &s.EventSchemaVersion, &envAlg, &s.EnvelopeDigest.Value,
		&s.Receipt.Ref, &receiptSchemaText, &recAlg, &s.Receipt.Digest, &body)
	if err != nil {
		return Stored{}, db.NotFound(err)
	}
	s.EnvelopeDigest.Algorithm = digest.Algorithm(envAlg)
	s.Receipt.SchemaVersion = receiptSchemaText
	s.Receipt.DigestAlgorithmVersion = digest.Algorithm(recAlg)
	s.Body = []byte(body)
	return s, nil
}

// errReceiptExists is returned by InsertTx when the key already has a row.
var errReceiptExists = errors.New("inbox: receipt already stored for the key")

// InsertTx inserts the receipt of k.
func (t *Table) InsertTx(ctx context.Context, q db.Executor, k Key, s Stored) error {
	args, err := t.keyArgs(k)
	if err != nil {
		return err
	}
	all := []any{k.ConsumerName, k.EventID, s.EventType, s.EventSchemaVersion,
		string(s.EnvelopeDigest.Algorithm), s.EnvelopeDigest.Value,
		s.Receipt.Ref, s.Receipt.SchemaVersion, string(s.Receipt.DigestAlgorithmVersion), s.Receipt.Digest,
		string(s.Body)}
	all = append(all, args[2:]...)
	var ref string
	if err := q.QueryRow(ctx, t.insert, all...).Scan(&ref); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return errReceiptExists
		}
		return err
	}
	return nil
}
