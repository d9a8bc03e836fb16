-- name: ReceiptInsertBatch :many
-- Insert the receipts of a batch of deliveries in one statement (one
-- transaction, one commit); the answer lists the events inserted now. The
-- others were applied before: compare them with ReceiptLookupMany. The
-- arrays are parallel (set-returning functions in the select list advance
-- together). Event ids travel as text[] (pgx has no binary []string →
-- uuid[] encoding and would fall back to text per call).
INSERT INTO bench.receipts (event_id, consumer_name, envelope_sha256, body)
SELECT unnest(sqlc.arg(event_ids)::text[]::uuid[]), unnest(@consumer_names::text[]), unnest(@envelope_sha256s::text[]),
       unnest(@bodies::text[])
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id;
