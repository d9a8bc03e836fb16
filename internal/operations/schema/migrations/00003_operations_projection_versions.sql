-- Projection versions of the Operations read model (DS-8, OPS-4): shadow
-- builds with their shadow claim fencing token, frozen cutover candidates,
-- immutable readiness proofs. docs/operations.md ("Projection versions")
-- explains the sequence.
--
-- The database is the second guard of the cutover:
--   * operations.shadow_fence() (every insert of a receipt, mutation, gap or
--     unsupported record): a version with a shadow build is written only
--     under its current shadow claim token (set_config
--     'oceanway.shadow_token', transaction-local), only while the build is
--     building or catching up, and while catching up only for events of the
--     frozen candidate. After the switch (cut_over) the version is active:
--     writes without a token are the dispatcher's, any shadow token is
--     refused. A writer with a token takes FOR SHARE on the build row, so
--     the cutover's pause (an UPDATE of that row) waits until every
--     in-flight shadow transaction has committed: that is the drain.
--   * operations.readiness_proof_check(): a readiness proof is accepted only
--     when its candidate is the build's current one and the version has a
--     receipt (same envelope digest) for every candidate member, no
--     unresolved revision gap, no unresolved unsupported-schema record and no
--     quarantined core_operations delivery of a candidate event.
--
-- Custom SQLSTATEs: OP003 write refused by the shadow fence, OP004 mutation
-- outside the frozen candidate, OP005 readiness proof refused.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.shadow_builds (
  projection_name        text        NOT NULL,
  projection_version     bigint      NOT NULL CHECK (projection_version >= 1),
  state                  text        NOT NULL CHECK (state IN ('building', 'paused', 'catching_up', 'cut_over')),
  claim_token            uuid        NOT NULL,
  claim_owner            text        NOT NULL,
  candidate_id           uuid,
  readiness_proof_digest text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection_name, projection_version),
  CHECK (state NOT IN ('catching_up', 'cut_over') OR candidate_id IS NOT NULL),
  CHECK ((state = 'cut_over') = (readiness_proof_digest IS NOT NULL))
);

-- A frozen cutover candidate: the exact members (source events with their
-- frozen definition and expected receipt coordinates) of one short
-- consistent snapshot, and the shadow claim token bound with it.
CREATE TABLE operations.cutover_candidates (
  candidate_id              uuid        NOT NULL PRIMARY KEY,
  projection_name           text        NOT NULL,
  projection_version        bigint      NOT NULL,
  active_projection_version bigint      NOT NULL,
  shadow_token              uuid        NOT NULL,
  database_snapshot         text        NOT NULL,
  frozen_at                 timestamptz NOT NULL,
  member_count              bigint      NOT NULL CHECK (member_count >= 0),
  members_sha256            text        NOT NULL CHECK (members_sha256 ~ '^[0-9a-f]{64}$'),
  FOREIGN KEY (projection_name, projection_version) REFERENCES operations.shadow_builds
);
CREATE TRIGGER /* guard OP001.cutover-candidates-insert-only */ cutover_candidates_insert_only BEFORE UPDATE OR DELETE ON operations.cutover_candidates
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

CREATE TABLE operations.cutover_candidate_members (
  candidate_id                                     uuid   NOT NULL REFERENCES operations.cutover_candidates,
  event_id                                         uuid   NOT NULL,
  event_type                                       text   NOT NULL,
  event_schema_version                             text   NOT NULL,
  event_envelope_digest_algorithm_version          text   NOT NULL,
  event_envelope_sha256                            text   NOT NULL,
  delivery_set_version                             bigint NOT NULL,
  delivery_set_definition_schema_version           text   NOT NULL,
  delivery_set_definition_digest_algorithm_version text   NOT NULL,
  delivery_set_definition_digest                   text   NOT NULL,
  consumer_name                                    text   NOT NULL,
  expected_receipt_type                            text   NOT NULL,
  expected_receipt_schema_version                  text   NOT NULL,
  PRIMARY KEY (candidate_id, event_id)
);
CREATE TRIGGER /* guard OP001.candidate-members-insert-only */ cutover_candidate_members_insert_only BEFORE UPDATE OR DELETE ON operations.cutover_candidate_members
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

-- Immutable readiness proofs: the canonical proof body (RFC 8785) and its
-- jcs-sha256-v1 digest, the content address the projection version's ready
-- mark and the switch reference.
CREATE TABLE operations.readiness_proofs (
  proof_digest                  text        NOT NULL PRIMARY KEY CHECK (proof_digest ~ '^[0-9a-f]{64}$'),
  proof_digest_algorithm_version text       NOT NULL CHECK (proof_digest_algorithm_version = 'jcs-sha256-v1'),
  projection_name               text        NOT NULL,
  projection_version            bigint      NOT NULL,
  candidate_id                  uuid        NOT NULL UNIQUE REFERENCES operations.cutover_candidates,
  member_count                  bigint      NOT NULL,
  proof_body                    text        NOT NULL,
  proved_at                     timestamptz NOT NULL,
  UNIQUE (projection_name, projection_version)
);
CREATE TRIGGER /* guard OP001.readiness-proofs-insert-only */ readiness_proofs_insert_only BEFORE UPDATE OR DELETE ON operations.readiness_proofs
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

CREATE FUNCTION operations.shadow_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
  tok   text := nullif(current_setting('oceanway.shadow_token', true), '');
  b     operations.shadow_builds%ROWTYPE;
  ev    uuid;
BEGIN
  IF tok IS NULL THEN
    SELECT * INTO b FROM operations.shadow_builds
     WHERE projection_name = NEW.projection_name AND projection_version = NEW.projection_version;
    IF /* guard OP003.shadow-write-without-token */ FOUND AND b.state <> 'cut_over' THEN
      RAISE EXCEPTION 'operations: %/% is a shadow build (%): writes need its shadow claim token',
        NEW.projection_name, NEW.projection_version, b.state USING ERRCODE = 'OP003';
    END IF;
    RETURN NEW;
  END IF;
  SELECT * INTO b FROM operations.shadow_builds
   WHERE projection_name = NEW.projection_name AND projection_version = NEW.projection_version
   FOR SHARE;
  IF /* guard OP003.token-without-shadow-build */ NOT FOUND THEN
    RAISE EXCEPTION 'operations: %/% has no shadow build; shadow token refused',
      NEW.projection_name, NEW.projection_version USING ERRCODE = 'OP003';
  END IF;
  IF /* guard OP003.token-after-cutover */ b.state = 'cut_over' THEN
    RAISE EXCEPTION 'operations: %/% is active since its cutover; shadow token refused',
      NEW.projection_name, NEW.projection_version USING ERRCODE = 'OP003';
  END IF;
  IF /* guard OP003.shadow-build-paused */ b.state = 'paused' THEN
    RAISE EXCEPTION 'operations: shadow build %/% is paused', NEW.projection_name, NEW.projection_version
      USING ERRCODE = 'OP003';
  END IF;
  IF /* guard OP003.stale-shadow-token */ b.claim_token::text <> tok THEN
    RAISE EXCEPTION 'operations: stale shadow claim token for %/%', NEW.projection_name, NEW.projection_version
      USING ERRCODE = 'OP003';
  END IF;
  IF b.state = 'catching_up' THEN
    ev := (to_jsonb(NEW) ->> TG_ARGV[0])::uuid;
  END IF;
  IF /* guard OP004.outside-frozen-candidate */ b.state = 'catching_up' AND NOT EXISTS (
       SELECT 1 FROM operations.cutover_candidate_members c WHERE c.candidate_id = b.candidate_id AND c.event_id = ev) THEN
    RAISE EXCEPTION 'operations: event % is outside the frozen cutover candidate of %/%', ev,
      NEW.projection_name, NEW.projection_version USING ERRCODE = 'OP004';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER applied_receipts_shadow_fence BEFORE INSERT ON operations.applied_receipts
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('event_id');
CREATE TRIGGER projected_events_shadow_fence BEFORE INSERT ON operations.projected_events
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('event_id');
CREATE TRIGGER revision_gaps_shadow_fence BEFORE INSERT ON operations.revision_gaps
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('waiting_event_id');
CREATE TRIGGER unsupported_events_shadow_fence BEFORE INSERT ON operations.unsupported_events
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('event_id');

CREATE FUNCTION operations.readiness_proof_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
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
  IF NOT FOUND OR b.state <> 'catching_up' OR b.candidate_id IS DISTINCT FROM NEW.candidate_id THEN
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
  IF members <> NEW.member_count OR missing > 0 OR gaps > 0 OR unsup > 0 OR quar > 0 THEN
    RAISE EXCEPTION 'operations: readiness proof refused for %/%: members % (proof says %), missing receipts %, unresolved gaps %, unsupported %, quarantined %',
      NEW.projection_name, NEW.projection_version, members, NEW.member_count, missing, gaps, unsup, quar
      USING ERRCODE = 'OP005';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER readiness_proofs_check BEFORE INSERT ON operations.readiness_proofs
  FOR EACH ROW EXECUTE FUNCTION operations.readiness_proof_check();

REVOKE ALL ON operations.shadow_builds, operations.cutover_candidates, operations.cutover_candidate_members,
  operations.readiness_proofs FROM PUBLIC;
REVOKE ALL ON FUNCTION operations.shadow_fence(), operations.readiness_proof_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION operations.shadow_fence() TO oceanway_operations;
-- The projector role reads the build state (status, the shadow builder) and
-- writes nothing of it: the cutover runs as the operator.
GRANT SELECT ON operations.shadow_builds, operations.cutover_candidates, operations.cutover_candidate_members,
  operations.readiness_proofs TO oceanway_operations;
GRANT SELECT ON outbox.projection_source_events TO oceanway_operations;
-- +goose StatementEnd
