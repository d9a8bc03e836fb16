-- The recovery baseline (outbox 00096): record one successful restore drill
-- in the source database; returns the drill document's address.
SELECT outbox.retention_record_drill(@drill_document::text)
