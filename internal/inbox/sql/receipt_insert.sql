-- Inserts one receipt into {table}, the consumer's receipt table (filled in
-- by inbox.NewTable). A concurrent insert of the same key cannot happen (the
-- advisory lock of begin serializes them); ON CONFLICT keeps a bug from
-- overwriting a receipt and reports it as no row. receipt_body holds the
-- RFC 8785 canonical bytes.
INSERT INTO {table} (consumer_name, event_id, {{receipt_columns}})
VALUES (@consumer_name, @event_id, {{receipt_values}})
ON CONFLICT DO NOTHING
RETURNING receipt_ref
