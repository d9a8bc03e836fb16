-- name: UnsupportedRecord :one
-- Records (or re-observes) a known core_operations event this projector
-- release cannot project yet; returns the digest first recorded.
INSERT INTO operations.unsupported_events AS u (projection_name, projection_version, event_id, event_type,
    event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256, reason_code,
    first_seen_at, last_seen_at)
VALUES (@projection_name, @projection_version, @event_id, @event_type, @event_schema_version,
    @event_envelope_digest_algorithm_version, @event_envelope_sha256, @reason_code, @now, @now)
ON CONFLICT (projection_name, projection_version, event_id)
DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, seen_count = u.seen_count + 1
RETURNING event_envelope_digest_algorithm_version, event_envelope_sha256;
