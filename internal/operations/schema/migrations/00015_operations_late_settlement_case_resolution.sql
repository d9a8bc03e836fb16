-- Late settlement cases close (issue 32 part 2): the projector marks an
-- exposure resolved from a verified billing.case-resolution.applied@1 and
-- closes the case (open → resolved) once every exposure of the generation
-- is resolved. The insert-only triggers of 00013 on late_settlement_cases
-- and late_settlement_case_exposures are replaced by forward-only guards:
-- open → resolved once, the resolution columns set together, nothing else
-- moves, no delete (OP006 for a wrong move, OP001 for a delete). The
-- projector records billing.late-settlement-command-result.committed@1 in
-- the dimension's aggregate (effect late_settlement_command_result_recorded).

-- +goose Up
-- +goose StatementBegin
DROP TRIGGER late_settlement_cases_insert_only ON operations.late_settlement_cases;
DROP TRIGGER late_settlement_case_exposures_insert_only ON operations.late_settlement_case_exposures;

ALTER TABLE operations.late_settlement_cases
  ADD COLUMN resolution_event_id uuid,
  ADD COLUMN resolved_at         timestamptz,
  ADD CONSTRAINT late_settlement_cases_resolution_fields CHECK (/* guard OP006.late-case-resolution-fields */ CASE state
    WHEN 'open' THEN num_nonnulls(resolution_event_id, resolved_at) = 0
    ELSE num_nonnulls(resolution_event_id, resolved_at) = 2 END);

ALTER TABLE operations.late_settlement_case_exposures
  ADD COLUMN resolution_event_id              uuid,
  ADD COLUMN resolution_event_envelope_sha256 text CHECK (resolution_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  ADD COLUMN resolution_operation_id          uuid,
  ADD COLUMN resolution_source                text CHECK (resolution_source IN ('late_settlement_command', 'settlement_transition')),
  ADD COLUMN resolution_applied_ref           text,
  ADD COLUMN resolution_applied_digest        text CHECK (resolution_applied_digest ~ '^[0-9a-f]{64}$'),
  ADD COLUMN resolved_at                      timestamptz,
  ADD CONSTRAINT late_settlement_case_exposures_resolution_fields CHECK (/* guard OP006.late-exposure-resolution-fields */
    num_nonnulls(resolution_event_id, resolution_event_envelope_sha256, resolution_operation_id, resolution_source,
      resolution_applied_ref, resolution_applied_digest, resolved_at) IN (0, 7));
CREATE INDEX late_settlement_case_exposures_unresolved ON operations.late_settlement_case_exposures
  (reconciliation_case_ref, projection_name, projection_version) WHERE resolved_at IS NULL;

CREATE FUNCTION operations.late_settlement_case_close() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard OP006.late-case-resolved-absorbing */ OLD.state <> 'open' THEN
    RAISE EXCEPTION 'operations: late settlement case % (%/%) is % already; a case closes once',
      OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version, OLD.state USING ERRCODE = 'OP006';
  END IF;
  IF /* guard OP006.late-case-update-not-resolve */ NEW.state <> 'resolved' THEN
    RAISE EXCEPTION 'operations: late settlement case % (%/%) may only move open → resolved',
      OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  IF /* guard OP006.late-case-frozen-columns */ (to_jsonb(NEW) - 'state' - 'resolution_event_id' - 'resolved_at')
      IS DISTINCT FROM (to_jsonb(OLD) - 'state' - 'resolution_event_id' - 'resolved_at') THEN
    RAISE EXCEPTION 'operations: late settlement case % (%/%): only its resolution moves',
      OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER late_settlement_cases_close_only BEFORE UPDATE ON operations.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION operations.late_settlement_case_close();
CREATE TRIGGER /* guard OP001.late-cases-no-delete */ late_settlement_cases_no_delete BEFORE DELETE ON operations.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

CREATE FUNCTION operations.late_settlement_exposure_resolve() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard OP006.late-exposure-resolved-absorbing */ OLD.resolved_at IS NOT NULL THEN
    RAISE EXCEPTION 'operations: late settlement exposure % (%/%) is resolved already; it resolves once',
      OLD.late_settlement_exposure_id, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  IF /* guard OP006.late-exposure-update-not-resolve */ NEW.resolved_at IS NULL THEN
    RAISE EXCEPTION 'operations: late settlement exposure % (%/%) may only move unresolved → resolved',
      OLD.late_settlement_exposure_id, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  IF /* guard OP006.late-exposure-frozen-columns */ (to_jsonb(NEW) - 'resolution_event_id' - 'resolution_event_envelope_sha256'
      - 'resolution_operation_id' - 'resolution_source' - 'resolution_applied_ref' - 'resolution_applied_digest' - 'resolved_at')
      IS DISTINCT FROM (to_jsonb(OLD) - 'resolution_event_id' - 'resolution_event_envelope_sha256'
      - 'resolution_operation_id' - 'resolution_source' - 'resolution_applied_ref' - 'resolution_applied_digest' - 'resolved_at') THEN
    RAISE EXCEPTION 'operations: late settlement exposure % (%/%): only its resolution moves',
      OLD.late_settlement_exposure_id, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER late_settlement_case_exposures_resolve_once BEFORE UPDATE ON operations.late_settlement_case_exposures
  FOR EACH ROW EXECUTE FUNCTION operations.late_settlement_exposure_resolve();
CREATE TRIGGER /* guard OP001.late-case-exposures-no-delete */ late_settlement_case_exposures_no_delete
  BEFORE DELETE ON operations.late_settlement_case_exposures FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded',
  'finalization_case_opened', 'finalization_case_materialized_resolved', 'finalization_case_successor_pending',
  'finalization_case_resolved', 'finalization_case_resolution_pending',
  'late_settlement_case_opened', 'late_settlement_case_joined',
  'late_settlement_command_result_recorded', 'late_settlement_exposure_resolved', 'late_settlement_case_resolved'));

GRANT UPDATE (state, resolution_event_id, resolved_at) ON operations.late_settlement_cases TO oceanway_operations;
GRANT UPDATE (resolution_event_id, resolution_event_envelope_sha256, resolution_operation_id, resolution_source,
  resolution_applied_ref, resolution_applied_digest, resolved_at) ON operations.late_settlement_case_exposures TO oceanway_operations;
GRANT EXECUTE ON FUNCTION operations.late_settlement_case_close(), operations.late_settlement_exposure_resolve() TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded',
  'finalization_case_opened', 'finalization_case_materialized_resolved', 'finalization_case_successor_pending',
  'finalization_case_resolved', 'finalization_case_resolution_pending',
  'late_settlement_case_opened', 'late_settlement_case_joined'));
DROP TRIGGER late_settlement_case_exposures_no_delete ON operations.late_settlement_case_exposures;
DROP TRIGGER late_settlement_case_exposures_resolve_once ON operations.late_settlement_case_exposures;
DROP TRIGGER late_settlement_cases_no_delete ON operations.late_settlement_cases;
DROP TRIGGER late_settlement_cases_close_only ON operations.late_settlement_cases;
DROP FUNCTION operations.late_settlement_exposure_resolve(), operations.late_settlement_case_close();
DROP INDEX operations.late_settlement_case_exposures_unresolved;
ALTER TABLE operations.late_settlement_case_exposures DROP CONSTRAINT late_settlement_case_exposures_resolution_fields,
  DROP COLUMN resolution_event_id, DROP COLUMN resolution_event_envelope_sha256, DROP COLUMN resolution_operation_id,
  DROP COLUMN resolution_source, DROP COLUMN resolution_applied_ref, DROP COLUMN resolution_applied_digest, DROP COLUMN resolved_at;
ALTER TABLE operations.late_settlement_cases DROP CONSTRAINT late_settlement_cases_resolution_fields,
  DROP COLUMN resolution_event_id, DROP COLUMN resolved_at;
CREATE TRIGGER late_settlement_cases_insert_only BEFORE UPDATE OR DELETE ON operations.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER late_settlement_case_exposures_insert_only BEFORE UPDATE OR DELETE ON operations.late_settlement_case_exposures
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
-- +goose StatementEnd
