-- name: UnsupportedResolve
-- Resolves the unsupported record of an event that a later projector
-- release applies now.
-- $1 projection name, $2 projection version, $3 event id, $4 now.
UPDATE operations.unsupported_events
   SET resolved_at = $4
 WHERE projection_name = $1 AND projection_version = $2 AND event_id = $3 AND resolved_at IS NULL
