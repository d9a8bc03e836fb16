-- name: UnsupportedResolve
-- Resolves the unsupported record of an event that a later projector
-- release applies now. Loaded, not sqlc: queued in the recordApplied batch.
UPDATE operations.unsupported_events
   SET resolved_at = @now
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND event_id = @event_id AND resolved_at IS NULL
