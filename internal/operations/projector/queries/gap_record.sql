-- name: GapRecord :one
-- Records (or re-observes) the revision gap of a waiting event (OPS-2) and
-- returns the envelope digest first recorded for it.
INSERT INTO operations.revision_gaps AS g (projection_name, projection_version, waiting_event_id, waiting_event_type,
    aggregate_type, aggregate_id, waiting_revision, applied_revision_at_detection,
    event_envelope_digest_algorithm_version, event_envelope_sha256, detected_at, last_seen_at)
VALUES (@projection_name, @projection_version, @waiting_event_id, @waiting_event_type, @aggregate_type, @aggregate_id,
    @waiting_revision, @applied_revision_at_detection, @event_envelope_digest_algorithm_version, @event_envelope_sha256,
    @now, @now)
ON CONFLICT (projection_name, projection_version, waiting_event_id)
DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, seen_count = g.seen_count + 1
RETURNING event_envelope_digest_algorithm_version, event_envelope_sha256;
