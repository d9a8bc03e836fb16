-- name: GapResolve
-- Resolves the gap of an event that is applied now; returns the digest the
-- gap recorded (no row: the event never waited).
-- $1 projection name, $2 projection version, $3 event id, $4 now.
UPDATE operations.revision_gaps
   SET resolved_at = $4
 WHERE projection_name = $1 AND projection_version = $2 AND waiting_event_id = $3 AND resolved_at IS NULL
RETURNING event_envelope_digest_algorithm_version, event_envelope_sha256
