-- name: CostWorkResult
-- A finished provider_cost Work's stored result (a replay of a committed
-- attempt returns it instead of writing again).
SELECT f.finished_body, coalesce(p.processing_body, '') AS processing_body, coalesce(c.fact_body, '') AS fact_body
FROM metering.work_finishes f
LEFT JOIN metering.cost_processing_facts p ON p.work_ref = f.work_ref
LEFT JOIN metering.provider_cost_facts c ON c.work_ref = f.work_ref
WHERE f.work_ref = @work_ref;
