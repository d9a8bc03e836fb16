-- name: GapResolve :one
-- Resolves the gap of an event that is applied now; returns the digest the
-- gap recorded (no row: the event never waited).
UPDATE operations.revision_gaps
   SET resolved_at = @now::timestamptz
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND waiting_event_id = @event_id AND resolved_at IS NULL
RETURNING event_envelope_digest_algorithm_version, event_envelope_sha256;
