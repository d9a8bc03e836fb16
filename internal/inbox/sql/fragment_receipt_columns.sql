-- The standard receipt columns after the key (see inbox.Table).
event_type, event_schema_version,
event_envelope_digest_algorithm_version, event_envelope_sha256,
receipt_ref, receipt_schema_version, receipt_digest_algorithm_version, receipt_digest,
receipt_body
