-- Late settlement exposure cases on Billing's side (issue 32, ADR-031
-- "终局后变化采用追加式 Transition"). docs/billing-catch-up.md ("Late
-- settlement cases") explains the rules.
--
--   late_settlement_cases  one row per (settlement dimension, case
--       generation): the identity Operations reserved
--       (LateSettlementCaseIdentityReservation@1) and the generation's state.
--       A generation is open while Billing still lets new exposures join it;
--       the late settlement command moves it to resolving and resolved (issue
--       32 part 2, whose migration opens that transition). At most one open
--       generation per dimension; generation N > 1 names N-1.
--   late_settlement_exposures gains the case it asked for: the case ref and
--       generation (null only for a Billing run without Operations' case
--       identities: caseRequest = not_requested) and the case-requested
--       event written in the same transaction.
--
-- Guards: BC001 insert-only and no TRUNCATE; BC013 an exposure joins only
-- an open generation of its own dimension.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE billing.late_settlement_cases (
  settlement_dimension_id                 uuid        NOT NULL,
  case_generation                         bigint      NOT NULL CHECK (case_generation >= 1),
  reconciliation_case_ref                 text        NOT NULL UNIQUE,
  case_identity_ref                       text        NOT NULL UNIQUE,
  case_identity_schema_version            text        NOT NULL CHECK (case_identity_schema_version = '1'),
  case_identity_digest_algorithm_version  text        NOT NULL CHECK (case_identity_digest_algorithm_version = 'jcs-sha256-v1'),
  case_identity_digest                    text        NOT NULL CHECK (case_identity_digest ~ '^[0-9a-f]{64}$'),
  case_request_operation_id               uuid        NOT NULL UNIQUE,
  predecessor_generation                  bigint,
  billing_reservation_id                  uuid        NOT NULL,
  billing_account_id                      uuid        NOT NULL,
  state                                   text        NOT NULL CHECK (state IN ('open', 'resolving', 'resolved')),
  opened_at                               timestamptz NOT NULL,
  PRIMARY KEY (settlement_dimension_id, case_generation),
  CHECK ((case_generation = 1) = (predecessor_generation IS NULL)),
  CHECK (predecessor_generation IS NULL OR predecessor_generation = case_generation - 1),
  FOREIGN KEY (settlement_dimension_id, predecessor_generation)
    REFERENCES billing.late_settlement_cases (settlement_dimension_id, case_generation),
  -- Only a finalized dimension (its catch-up fence exists) has late exposures.
  FOREIGN KEY (settlement_dimension_id) REFERENCES billing.settlement_catch_up_fences (settlement_dimension_id)
);
-- A dimension has at most one generation new exposures may join.
CREATE UNIQUE INDEX late_settlement_cases_one_open ON billing.late_settlement_cases (settlement_dimension_id)
  WHERE state = 'open';
CREATE TRIGGER late_settlement_cases_insert_only
  BEFORE UPDATE OR DELETE ON billing.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE TRIGGER /* guard BC001.late-cases-no-truncate */ late_settlement_cases_no_truncate
  BEFORE TRUNCATE ON billing.late_settlement_cases
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

ALTER TABLE billing.late_settlement_exposures
  ADD COLUMN case_generation               bigint,
  ADD COLUMN reconciliation_case_ref       text,
  ADD COLUMN case_event_id                 uuid UNIQUE,
  ADD COLUMN case_event_envelope_sha256    text CHECK (case_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  ADD CONSTRAINT late_settlement_exposures_case_all_or_none
    CHECK (num_nonnulls(case_generation, reconciliation_case_ref, case_event_id, case_event_envelope_sha256) IN (0, 4)),
  ADD CONSTRAINT late_settlement_exposures_case_fk FOREIGN KEY (settlement_dimension_id, case_generation)
    REFERENCES billing.late_settlement_cases (settlement_dimension_id, case_generation);

-- An exposure joins only the open generation of its own dimension, under
-- that generation's case ref: never a resolving or resolved one (an old
-- generation's grant or receipt cannot revive a new difference).
CREATE FUNCTION billing.late_exposure_joins_open_case() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  c billing.late_settlement_cases;
BEGIN
  IF NEW.case_generation IS NULL THEN
    RETURN NEW;
  END IF;
  SELECT * INTO c FROM billing.late_settlement_cases
   WHERE settlement_dimension_id = NEW.settlement_dimension_id AND case_generation = NEW.case_generation;
  IF /* guard BC013.exposure-case-not-open */ c.state IS DISTINCT FROM 'open'
     OR c.reconciliation_case_ref IS DISTINCT FROM NEW.reconciliation_case_ref THEN
    RAISE EXCEPTION 'billing: exposure % may join only the open case generation of its dimension (generation % is %)',
      NEW.late_settlement_exposure_id, NEW.case_generation, coalesce(c.state, 'unknown') USING ERRCODE = 'BC013';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER late_settlement_exposures_join_open_case BEFORE INSERT ON billing.late_settlement_exposures
  FOR EACH ROW EXECUTE FUNCTION billing.late_exposure_joins_open_case();

REVOKE ALL ON billing.late_settlement_cases FROM PUBLIC;
REVOKE ALL ON FUNCTION billing.late_exposure_joins_open_case() FROM PUBLIC;
GRANT SELECT, INSERT ON billing.late_settlement_cases TO oceanway_billing;
GRANT EXECUTE ON FUNCTION billing.late_exposure_joins_open_case() TO oceanway_billing;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TRIGGER late_settlement_exposures_join_open_case ON billing.late_settlement_exposures;
DROP FUNCTION billing.late_exposure_joins_open_case();
ALTER TABLE billing.late_settlement_exposures
  DROP CONSTRAINT late_settlement_exposures_case_fk,
  DROP CONSTRAINT late_settlement_exposures_case_all_or_none,
  DROP COLUMN case_event_envelope_sha256,
  DROP COLUMN case_event_id,
  DROP COLUMN reconciliation_case_ref,
  DROP COLUMN case_generation;
DROP TABLE billing.late_settlement_cases;
-- +goose StatementEnd
