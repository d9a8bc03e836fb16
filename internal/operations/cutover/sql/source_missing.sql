-- name: SourceMissing
-- One pass of the shadow feed: the ids of the source events
-- (outbox.projection_source_events, the core_operations members that require
-- this projection) without a receipt of the version being built, in append
-- order. Scoped to a frozen candidate when @candidate_id is not null
-- (catch-up to the cutover boundary); bounded by the append time @until when
-- not null (a feed that started at @until ends even under constant load).
-- One anti-join per pass (a rebuild reads the whole source once per pass,
-- never once per page). Loaded, not sqlc: a view of another line with an
-- optional scope.
SELECT s.event_id::text AS event_id
  FROM outbox.projection_source_events s
 WHERE s.destination = 'core_operations' AND s.projection_name = @projection_name
   AND (@candidate_id::uuid IS NULL OR EXISTS (
         SELECT 1 FROM operations.cutover_candidate_members c
          WHERE c.candidate_id = @candidate_id::uuid AND c.event_id = s.event_id))
   AND (@until::timestamptz IS NULL OR s.created_at <= @until::timestamptz)
   AND NOT EXISTS (
         SELECT 1 FROM operations.applied_receipts r
          WHERE r.consumer_name = 'operations_projector' AND r.projection_name = @projection_name
            AND r.projection_version = @projection_version AND r.event_id = s.event_id)
 ORDER BY s.created_at, s.event_id
