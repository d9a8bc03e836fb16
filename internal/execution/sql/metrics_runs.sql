-- Runs still accepting attempts and the age of the oldest (partial index
-- run_execution_states_accepting).
SELECT count(*)::float8, COALESCE(EXTRACT(EPOCH FROM now() - min(opened_at)), 0)::float8
  FROM execution.run_execution_states
 WHERE state = 'accepting_attempts';
