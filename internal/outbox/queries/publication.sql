-- name: PublicationRecord :one
-- OB-PUB-1: call in the ack transaction after the success finish and the
-- acknowledged delivery update. Returns complete | not_complete; raises
-- OW009 when the ack disagrees with the frozen event/member/delivery/attempt.
SELECT outbox.record_publication(
  @event_id::uuid, @destination::text, @consumer_name::text, @attempt_id::uuid, @lease_token::uuid,
  @ack_receipt_type::text, @ack_receipt_key::text, @ack_receipt_schema_version::text,
  @ack_receipt_digest_algorithm_version::text, @ack_receipt_digest::text,
  @ack_event_envelope_digest_algorithm_version::text, @ack_event_envelope_sha256::text)::text AS result;
