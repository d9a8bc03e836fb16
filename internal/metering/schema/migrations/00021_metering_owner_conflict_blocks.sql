-- Blocked@1 on an owner's conflict fact (issue 32): when an owner read
-- answers conflicting with the owner's stored conflict fact (today the
-- Gateway's GatewayEvidenceConflictFact@1), the eligibility Work's attempt
-- records MeteringInputWorkAttemptBlocked@1 whose blockingCause is the
-- owner branch (execution_eligibility_owner_conflict,
-- gateway_usage_owner_conflict, gateway_binding_owner_conflict) with that
-- fact's quadruple: Metering writes no conflict evidence of its own, the
-- Work stays queued (its lane blocked_on_owner_conflict) and a later attempt
-- retries it once the owner fixed the cause (or a newer input supersedes it).
--
-- metering.work_blocks keeps every Blocked@1: a row carries either its
-- Metering conflict evidence (the processing branches) or the owner's fact
-- quadruple (the owner branches), never both, never neither.
--
-- Custom SQLSTATE (new):
--   ME016 a work block whose columns do not match its Blocked@1 body: an
--         owner-branch body without exactly the owner fact columns it names
--         (kind and quadruple), or a processing-branch body without its
--         conflict evidence, or a row carrying both.

-- +goose Up
-- +goose StatementBegin
ALTER TABLE metering.work_blocks
  ALTER COLUMN evidence_ref DROP NOT NULL,
  ALTER COLUMN evidence_digest DROP NOT NULL,
  ALTER COLUMN evidence_body DROP NOT NULL,
  ADD COLUMN owner_conflict_kind text,
  ADD COLUMN owner_conflict_fact_ref text,
  ADD COLUMN owner_conflict_fact_schema_version text,
  ADD COLUMN owner_conflict_fact_digest_algorithm_version text,
  ADD COLUMN owner_conflict_fact_digest text;

CREATE FUNCTION metering.guard_work_block_cause() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  bc jsonb;
  kind text;
  prefix text;
BEGIN
  bc := NEW.blocked_body::jsonb -> 'blockingCause';
  kind := bc ->> 'kind';
  prefix := CASE kind
    WHEN 'execution_eligibility_owner_conflict' THEN 'executionEligibilityConflictFact'
    WHEN 'gateway_usage_owner_conflict' THEN 'gatewayEvidenceConflictFact'
    WHEN 'gateway_binding_owner_conflict' THEN 'gatewayBindingConflictFact'
  END;
  IF /* guard ME016.owner-cause-without-fact */ prefix IS NOT NULL AND (
       (NEW.owner_conflict_kind, NEW.owner_conflict_fact_ref, NEW.owner_conflict_fact_schema_version,
        NEW.owner_conflict_fact_digest_algorithm_version, NEW.owner_conflict_fact_digest)
       IS DISTINCT FROM
       (kind, bc ->> (prefix || 'Ref'), bc ->> (prefix || 'SchemaVersion'),
        bc ->> (prefix || 'DigestAlgorithmVersion'), bc ->> (prefix || 'Digest'))
       OR NEW.evidence_ref IS NOT NULL OR NEW.evidence_digest IS NOT NULL OR NEW.evidence_body IS NOT NULL) THEN
    RAISE EXCEPTION 'metering: work block % names the owner fact % but its columns differ or carry Metering evidence',
      NEW.blocked_ref, coalesce(bc ->> (prefix || 'Ref'), '?')
      USING ERRCODE = 'ME016';
  END IF;
  IF /* guard ME016.processing-cause-without-evidence */ prefix IS NULL AND (
       NEW.evidence_ref IS NULL OR NEW.evidence_digest IS NULL OR NEW.evidence_body IS NULL
       OR NEW.owner_conflict_kind IS NOT NULL OR NEW.owner_conflict_fact_ref IS NOT NULL
       OR NEW.owner_conflict_fact_schema_version IS NOT NULL OR NEW.owner_conflict_fact_digest_algorithm_version IS NOT NULL
       OR NEW.owner_conflict_fact_digest IS NOT NULL) THEN
    RAISE EXCEPTION 'metering: work block % (%) needs its conflict evidence and no owner fact', NEW.blocked_ref, coalesce(kind, '?')
      USING ERRCODE = 'ME016';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER work_blocks_guard_cause BEFORE INSERT ON metering.work_blocks
  FOR EACH ROW EXECUTE FUNCTION metering.guard_work_block_cause();

REVOKE ALL ON FUNCTION metering.guard_work_block_cause() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.guard_work_block_cause() TO oceanway_metering;
-- +goose StatementEnd

-- +goose Down
-- forward-only
