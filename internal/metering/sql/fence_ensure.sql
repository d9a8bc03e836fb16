-- name: FenceEnsure
-- The attempt's input fence is created on first use; FenceSelect then locks it.
INSERT INTO metering.input_fences (execution_attempt_id) VALUES (@attempt_id)
ON CONFLICT (execution_attempt_id) DO NOTHING;
