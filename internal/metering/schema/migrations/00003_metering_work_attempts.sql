-- Metering input Work attempts and finishes (issue 14, Deliver item 2):
-- a worker claims pending Work (FOR UPDATE SKIP LOCKED) and starts a
-- fenced attempt (attempt number, fencing token, lease); a Work has at most
-- one MeteringInputWorkAttemptFinished@1 (the primary key), written only
-- under the Work's latest attempt token. docs/metering.md explains the rules.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE metering.work_attempts (
  work_ref        text        NOT NULL REFERENCES metering.input_works,
  attempt_number  bigint      NOT NULL CHECK (attempt_number >= 1),
  fencing_token   uuid        NOT NULL UNIQUE,
  started_at      timestamptz NOT NULL DEFAULT now(),
  lease_until     timestamptz NOT NULL,
  PRIMARY KEY (work_ref, attempt_number)
);
CREATE TRIGGER /* guard ME001.work-attempts-insert-only */ work_attempts_insert_only BEFORE UPDATE OR DELETE ON metering.work_attempts
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

-- MeteringInputWorkAttemptFinished@1: one finish per Work, bound to the
-- attempt (number, token) that wrote it. Insert-only.
CREATE TABLE metering.work_finishes (
  work_ref                       text        PRIMARY KEY,
  attempt_number                 bigint      NOT NULL,
  fencing_token                  uuid        NOT NULL,
  finished_ref                   text        NOT NULL UNIQUE,
  finished_digest                text        NOT NULL CHECK (finished_digest ~ '^[0-9a-f]{64}$'),
  outcome_state                  text        NOT NULL CHECK (outcome_state IN
    ('waiting_for_counterpart', 'applied', 'availability_processed', 'superseded')),
  finished_body                  text        NOT NULL,
  recorded_at                    timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (work_ref, attempt_number) REFERENCES metering.work_attempts (work_ref, attempt_number)
);
CREATE TRIGGER /* guard ME001.work-finishes-insert-only */ work_finishes_insert_only BEFORE UPDATE OR DELETE ON metering.work_finishes
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

-- The claim queue: one row per unfinished Work (inserted with the Work,
-- deleted with its finish), so a claim reads only unfinished Work however
-- long the history grows. A claim sets the lease on the locked row itself,
-- so a concurrent claimer that reaches the row after the commit re-checks
-- the new lease (EvalPlanQual) and moves on.
CREATE TABLE metering.pending_works (
  work_ref    text        PRIMARY KEY REFERENCES metering.input_works,
  queued_at   timestamptz NOT NULL DEFAULT now(),
  lease_until timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX pending_works_queued ON metering.pending_works (queued_at, work_ref);
INSERT INTO metering.pending_works (work_ref, queued_at)
  SELECT work_ref, created_at FROM metering.input_works;

GRANT SELECT, INSERT ON metering.work_attempts, metering.work_finishes TO oceanway_metering;
GRANT SELECT, INSERT, DELETE, UPDATE (lease_until) ON metering.pending_works TO oceanway_metering;
-- +goose StatementEnd
