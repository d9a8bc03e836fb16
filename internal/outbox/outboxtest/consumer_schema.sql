-- The test consumer's own database tables (created by NewConsumer, read by
-- sqlc as the schema of queries/): one stored receipt per applied event and
-- one effect row, written in the same transaction.
CREATE SCHEMA outboxtest;
CREATE TABLE outboxtest.receipts (
  event_id        uuid PRIMARY KEY,
  envelope_sha256 text NOT NULL,
  body            text NOT NULL,
  applied_at      timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE outboxtest.effects (event_id uuid PRIMARY KEY REFERENCES outboxtest.receipts);
