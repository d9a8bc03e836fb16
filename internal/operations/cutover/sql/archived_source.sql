-- name: ArchivedSource
-- RET-1 with DS-8: the archived events of this projection's source (outbox
-- 00096 outbox.projection_archived_source_events) that a shadow build cannot
-- read (it feeds from hot events only) and that the frozen candidate
-- @candidate_id does not hold (all of them when null). A shadow claim, the
-- freeze and the final transaction refuse while it is not zero: a readiness
-- proof never covers fewer events than the source. An index lookup per
-- archived event of the projection; zero rows on a database never archived.
SELECT count(*) AS archived
  FROM outbox.projection_archived_source_events s
 WHERE s.destination = 'core_operations' AND s.projection_name = @projection_name
   AND (@candidate_id::uuid IS NULL OR NOT EXISTS (
         SELECT 1 FROM operations.cutover_candidate_members c
          WHERE c.candidate_id = @candidate_id::uuid AND c.event_id = s.event_id))
