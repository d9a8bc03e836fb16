-- name: ChargeDimensionAwaitInsert
-- Record that a registered dimension had no Gateway usage availability when
-- the eligibility Work ran (awaiting_evidence); the first time only. The
-- triggers refuse an attempt that is not the Work's latest and a dimension
-- the attempt does not register (ME014).
INSERT INTO metering.charge_dimension_awaits (execution_attempt_id, charge_dimension_key, work_ref, attempt_number, fencing_token)
VALUES (@attempt_id, @charge_dimension_key, @work_ref, @attempt_number, @fencing_token)
ON CONFLICT (execution_attempt_id, charge_dimension_key) DO NOTHING;
