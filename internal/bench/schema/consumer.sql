-- The bench consumer's own database: one receipt per event, keyed by the
-- event id (insert-or-compare), like a real consumer's inbox table.
CREATE SCHEMA bench;
CREATE TABLE bench.receipts (
  event_id        uuid PRIMARY KEY,
  consumer_name   text NOT NULL,
  envelope_sha256 text NOT NULL,
  body            text NOT NULL,
  applied_at      timestamptz NOT NULL DEFAULT now()
);
