-- Guard clauses (issue 37): execution.prove_closure (migration 00003)
-- refused three things under one condition; each is now its own clause, so
-- that each can be disabled alone and proven by its own test. Same SQLSTATE
-- (EX004), same message, same behaviour: at COMMIT a closed run must have
--   - every attempt with its eligibility fact,
--   - its attempt set counting exactly its attempts,
--   - its finalization fact counting exactly its attempts.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION execution.prove_closure() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  attempts bigint;
  missing bigint;
  set_count bigint;
  fact_count bigint;
BEGIN
  IF NEW.state <> 'attempts_closed' THEN
    RETURN NULL;
  END IF;
  SELECT count(*), count(*) FILTER (WHERE e.execution_attempt_id IS NULL)
    INTO attempts, missing
    FROM execution.attempts a
    LEFT JOIN execution.eligibility_facts e ON e.execution_attempt_id = a.execution_attempt_id
   WHERE a.run_id = NEW.run_id;
  SELECT s.attempt_count, f.attempt_count INTO set_count, fact_count
    FROM execution.attempt_set_manifests s
    LEFT JOIN execution.run_finalizations f ON f.run_id = s.run_id
   WHERE s.run_id = NEW.run_id;
  IF /* guard EX004.attempt-without-eligibility */ missing > 0 THEN
    RAISE EXCEPTION 'execution: closed run % lacks a complete closure (attempts %, without eligibility %, set %, fact %)',
      NEW.run_id, attempts, missing, set_count, fact_count
      USING ERRCODE = 'EX004';
  END IF;
  IF /* guard EX004.set-count */ set_count IS DISTINCT FROM attempts THEN
    RAISE EXCEPTION 'execution: closed run % lacks a complete closure (attempts %, without eligibility %, set %, fact %)',
      NEW.run_id, attempts, missing, set_count, fact_count
      USING ERRCODE = 'EX004';
  END IF;
  IF /* guard EX004.fact-count */ fact_count IS DISTINCT FROM attempts THEN
    RAISE EXCEPTION 'execution: closed run % lacks a complete closure (attempts %, without eligibility %, set %, fact %)',
      NEW.run_id, attempts, missing, set_count, fact_count
      USING ERRCODE = 'EX004';
  END IF;
  RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
-- forward-only
