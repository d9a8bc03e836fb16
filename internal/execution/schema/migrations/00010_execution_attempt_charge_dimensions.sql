-- The expected charge dimension set (issue 32 part 4): every attempt's
-- AttemptExecutionManifest@1 freezes the Contracts charge dimension registry
-- version and the sorted set of charge dimensions its output contract
-- registers. The columns below hold that set as the row's own, derived from
-- the manifest body by the insert trigger, so PostgreSQL itself refuses an
-- attempt whose manifest freezes no set, an empty one, or one that is not
-- strictly sorted (EX011); once inserted the row never changes (EX001
-- attempts-immutable), so the frozen set never changes either. Metering and
-- Billing read the set from the manifest (Execution's owner read), never from
-- evidence that happens to have arrived.

-- +goose Up
-- +goose StatementBegin
ALTER TABLE execution.attempts
  ADD COLUMN charge_dimension_registry_version text,
  ADD COLUMN charge_dimension_keys text[];

CREATE FUNCTION execution.freeze_attempt_dimensions() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  body jsonb := NEW.manifest_body::jsonb;
  keys text[];
  sorted text[];
BEGIN
  IF jsonb_typeof(body -> 'chargeDimensionKeys') = 'array' THEN
    SELECT coalesce(array_agg(k ORDER BY o), '{}') INTO keys
      FROM jsonb_array_elements_text(body -> 'chargeDimensionKeys') WITH ORDINALITY AS e(k, o);
    SELECT coalesce(array_agg(k ORDER BY k), '{}') INTO sorted
      FROM (SELECT DISTINCT k COLLATE "C" AS k FROM unnest(keys) AS u(k)) AS d;
  END IF;
  IF /* guard EX011.attempt-dimensions-frozen */ keys IS NULL OR cardinality(keys) = 0 OR keys IS DISTINCT FROM sorted
     OR coalesce(body ->> 'chargeDimensionRegistryVersion', '') = ''
     OR (NEW.charge_dimension_keys IS NOT NULL AND NEW.charge_dimension_keys IS DISTINCT FROM keys)
     OR (NEW.charge_dimension_registry_version IS NOT NULL AND NEW.charge_dimension_registry_version IS DISTINCT FROM body ->> 'chargeDimensionRegistryVersion') THEN
    RAISE EXCEPTION 'execution: attempt % does not freeze a sorted, non-empty charge dimension set', NEW.execution_attempt_id
      USING ERRCODE = 'EX011';
  END IF;
  NEW.charge_dimension_keys := keys;
  NEW.charge_dimension_registry_version := body ->> 'chargeDimensionRegistryVersion';
  RETURN NEW;
END
$fn$;

-- Fires after attempts_guard_insert (triggers fire in name order): a closed
-- run refuses first (EX003).
CREATE TRIGGER attempts_guard_insert_dimensions
  BEFORE INSERT ON execution.attempts
  FOR EACH ROW EXECUTE FUNCTION execution.freeze_attempt_dimensions();
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TRIGGER attempts_guard_insert_dimensions ON execution.attempts;
DROP FUNCTION execution.freeze_attempt_dimensions();
ALTER TABLE execution.attempts DROP COLUMN charge_dimension_keys, DROP COLUMN charge_dimension_registry_version;
-- +goose StatementEnd
