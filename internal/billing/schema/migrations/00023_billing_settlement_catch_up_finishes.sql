-- BillingSettlementCatchUpWorkAttemptFinished@1: the one finish of a
-- catch-up Work generation, committed with its effect (caught_up, or the
-- transition / rebaseline with the successor Work). The primary key is the
-- generation: no generation finishes twice; a successor is exactly the next
-- generation and exists (its Work is inserted first in the same transaction);
-- a transition_applied finish names the transition that Work committed.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE billing.settlement_catch_up_finishes (
  settlement_dimension_id           uuid        NOT NULL,
  work_generation                   bigint      NOT NULL,
  finished_ref                      text        NOT NULL UNIQUE,
  finished_schema_version           text        NOT NULL CHECK (finished_schema_version = '1'),
  finished_digest_algorithm_version text        NOT NULL CHECK (finished_digest_algorithm_version = 'jcs-sha256-v1'),
  finished_digest                   text        NOT NULL CHECK (finished_digest ~ '^[0-9a-f]{64}$'),
  outcome                           text        NOT NULL CHECK (outcome IN ('caught_up', 'transition_applied', 'already_evaluated')),
  successor_generation              bigint,
  transition_to_revision            bigint,
  finished_body                     text        NOT NULL,
  finished_at                       timestamptz NOT NULL,
  PRIMARY KEY (settlement_dimension_id, work_generation),
  FOREIGN KEY (settlement_dimension_id, work_generation)
    REFERENCES billing.settlement_catch_up_works (settlement_dimension_id, work_generation),
  FOREIGN KEY (settlement_dimension_id, successor_generation)
    REFERENCES billing.settlement_catch_up_works (settlement_dimension_id, work_generation),
  FOREIGN KEY (settlement_dimension_id, transition_to_revision)
    REFERENCES billing.settlement_transitions (settlement_dimension_id, to_settlement_state_revision),
  CHECK ((outcome = 'caught_up') = (successor_generation IS NULL)),
  CHECK (successor_generation IS NULL OR successor_generation = work_generation + 1),
  CHECK ((outcome = 'transition_applied') = (transition_to_revision IS NOT NULL))
);
CREATE TRIGGER /* guard BC001.finishes-insert-only */ settlement_catch_up_finishes_insert_only BEFORE UPDATE OR DELETE ON billing.settlement_catch_up_finishes
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();

REVOKE ALL ON billing.settlement_catch_up_finishes FROM PUBLIC;
GRANT SELECT, INSERT ON billing.settlement_catch_up_finishes TO oceanway_billing;
-- +goose StatementEnd
