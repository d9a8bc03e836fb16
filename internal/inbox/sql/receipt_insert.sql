-- name: ReceiptInsert
-- Inserts one receipt (inbox.NewTable fills in the table and, for
-- projection consumers, the projection columns). A concurrent insert of the same key cannot happen
-- (the advisory lock of Begin serializes them); ON CONFLICT keeps a bug
-- from overwriting a receipt and reports it as no row.
-- $1 consumer, $2 event id, $3 event type, $4 event schema version,
-- $5 envelope digest algorithm, $6 envelope sha256, $7 receipt ref,
-- $8 receipt schema version, $9 receipt digest algorithm, $10 receipt digest,
-- $11 receipt body (RFC 8785 canonical bytes){{projection_insert_args}}.
INSERT INTO {{table}} (consumer_name, event_id, event_type, event_schema_version,
    event_envelope_digest_algorithm_version, event_envelope_sha256,
    receipt_ref, receipt_schema_version, receipt_digest_algorithm_version, receipt_digest,
    receipt_body{{projection_columns}})
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11{{projection_values}})
ON CONFLICT DO NOTHING
RETURNING receipt_ref
