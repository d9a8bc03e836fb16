-- name: ReceiptInsertBatch :many
-- Insert the receipts of a batch of deliveries in one statement (one
-- transaction, one commit); the answer lists the events inserted now. The
-- others were applied before: compare them with ReceiptLookupMany. The
-- arrays are parallel (set-returning functions in the select list advance
-- together).
INSERT INTO bench.receipts (event_id, consumer_name, envelope_sha256, body)
SELECT unnest(@event_ids::uuid[]), unnest(@consumer_names::text[]), unnest(@envelope_sha256s::text[]),
       unnest(@bodies::text[])
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id;
