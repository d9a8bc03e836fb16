-- The readiness proof check, one refusal per clause (issue 37).
--
-- operations.readiness_proof_check (00003) refused a readiness proof with
-- one condition that ORed five refusals OPS-4 and DS-8 list separately: the
-- proof's member count differs from its candidate's, a candidate member has
-- no receipt of the version (same envelope digest), an unresolved revision
-- gap, an unresolved unsupported-schema record, a quarantined
-- core_operations delivery of a candidate event. It is redefined with the
-- same counts, order, message and SQLSTATE (OP005), each refusal its own
-- condition carrying its clause marker (docs/guard-clauses.md), so a test
-- can tell each one apart from its absence. Nothing else changes.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION operations.readiness_proof_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  b        operations.shadow_builds%ROWTYPE;
  members  bigint;
  missing  bigint;
  gaps     bigint;
  unsup    bigint;
  quar     bigint;
BEGIN
  SELECT * INTO b FROM operations.shadow_builds
   WHERE projection_name = NEW.projection_name AND projection_version = NEW.projection_version;
  IF /* guard OP005.proof-candidate-not-current */ NOT FOUND OR b.state <> 'catching_up' OR b.candidate_id IS DISTINCT FROM NEW.candidate_id THEN
    RAISE EXCEPTION 'operations: readiness proof refused: candidate % is not the frozen candidate of a catching-up shadow %/%',
      NEW.candidate_id, NEW.projection_name, NEW.projection_version USING ERRCODE = 'OP005';
  END IF;
  SELECT count(*) INTO members FROM operations.cutover_candidate_members c WHERE c.candidate_id = NEW.candidate_id;
  SELECT count(*) INTO missing FROM operations.cutover_candidate_members c
   WHERE c.candidate_id = NEW.candidate_id AND NOT EXISTS (
     SELECT 1 FROM operations.applied_receipts r
      WHERE r.consumer_name = c.consumer_name AND r.projection_name = NEW.projection_name
        AND r.projection_version = NEW.projection_version AND r.event_id = c.event_id
        AND r.event_envelope_digest_algorithm_version = c.event_envelope_digest_algorithm_version
        AND r.event_envelope_sha256 = c.event_envelope_sha256);
  SELECT count(*) INTO gaps FROM operations.revision_gaps g
   WHERE g.projection_name = NEW.projection_name AND g.projection_version = NEW.projection_version AND g.resolved_at IS NULL;
  SELECT count(*) INTO unsup FROM operations.unsupported_events u
   WHERE u.projection_name = NEW.projection_name AND u.projection_version = NEW.projection_version AND u.resolved_at IS NULL;
  SELECT count(*) INTO quar FROM outbox.delivery_facts f
    JOIN operations.cutover_candidate_members c ON c.candidate_id = NEW.candidate_id AND c.event_id = f.event_id
   WHERE f.destination = 'core_operations' AND f.status = 'quarantined';
  IF /* guard OP005.proof-member-count */ members <> NEW.member_count THEN
    RAISE EXCEPTION 'operations: readiness proof refused for %/%: members % (proof says %), missing receipts %, unresolved gaps %, unsupported %, quarantined %',
      NEW.projection_name, NEW.projection_version, members, NEW.member_count, missing, gaps, unsup, quar
      USING ERRCODE = 'OP005';
  END IF;
  IF /* guard OP005.proof-missing-receipt */ missing > 0 THEN
    RAISE EXCEPTION 'operations: readiness proof refused for %/%: members % (proof says %), missing receipts %, unresolved gaps %, unsupported %, quarantined %',
      NEW.projection_name, NEW.projection_version, members, NEW.member_count, missing, gaps, unsup, quar
      USING ERRCODE = 'OP005';
  END IF;
  IF /* guard OP005.proof-unresolved-gap */ gaps > 0 THEN
    RAISE EXCEPTION 'operations: readiness proof refused for %/%: members % (proof says %), missing receipts %, unresolved gaps %, unsupported %, quarantined %',
      NEW.projection_name, NEW.projection_version, members, NEW.member_count, missing, gaps, unsup, quar
      USING ERRCODE = 'OP005';
  END IF;
  IF /* guard OP005.proof-unsupported-record */ unsup > 0 THEN
    RAISE EXCEPTION 'operations: readiness proof refused for %/%: members % (proof says %), missing receipts %, unresolved gaps %, unsupported %, quarantined %',
      NEW.projection_name, NEW.projection_version, members, NEW.member_count, missing, gaps, unsup, quar
      USING ERRCODE = 'OP005';
  END IF;
  IF /* guard OP005.proof-quarantined-delivery */ quar > 0 THEN
    RAISE EXCEPTION 'operations: readiness proof refused for %/%: members % (proof says %), missing receipts %, unresolved gaps %, unsupported %, quarantined %',
      NEW.projection_name, NEW.projection_version, members, NEW.member_count, missing, gaps, unsup, quar
      USING ERRCODE = 'OP005';
  END IF;
  RETURN NEW;
END
$fn$;
-- +goose StatementEnd
