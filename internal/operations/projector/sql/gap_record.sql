-- name: GapRecord
-- Records (or re-observes) the revision gap of a waiting event (OPS-2) and
-- returns the envelope digest first recorded for it.
-- $1 projection name, $2 projection version, $3 event id, $4 event type,
-- $5 aggregate type, $6 aggregate id, $7 waiting revision, $8 applied revision,
-- $9 envelope digest algorithm, $10 envelope sha256, $11 now.
INSERT INTO operations.revision_gaps AS g (projection_name, projection_version, waiting_event_id, waiting_event_type,
    aggregate_type, aggregate_id, waiting_revision, applied_revision_at_detection,
    event_envelope_digest_algorithm_version, event_envelope_sha256, detected_at, last_seen_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
ON CONFLICT (projection_name, projection_version, waiting_event_id)
DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, seen_count = g.seen_count + 1
RETURNING event_envelope_digest_algorithm_version, event_envelope_sha256
