-- Restore drill: fresh statistics for the loaded tables, so the check and
-- the re-export plan index lookups instead of scans per row.
ANALYZE outbox.outbox_events, outbox.outbox_deliveries, outbox.outbox_delivery_attempt_starts,
  outbox.outbox_delivery_attempt_finishes, outbox.delivery_set_versions, outbox.delivery_set_members,
  outbox.destination_bindings
