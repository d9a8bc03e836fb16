-- name: UnsupportedRecord
-- Records (or re-observes) a known core_operations event this projector
-- release cannot project yet; returns the digest first recorded.
-- $1 projection name, $2 projection version, $3 event id, $4 event type,
-- $5 schema version, $6 envelope digest algorithm, $7 envelope sha256, $8 reason code, $9 now.
INSERT INTO operations.unsupported_events AS u (projection_name, projection_version, event_id, event_type,
    event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256, reason_code,
    first_seen_at, last_seen_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT (projection_name, projection_version, event_id)
DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, seen_count = u.seen_count + 1
RETURNING event_envelope_digest_algorithm_version, event_envelope_sha256
