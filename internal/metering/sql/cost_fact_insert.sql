-- name: CostFactInsert
-- Insert-or-compare of the Work's one ProviderCostFact@1 (the caller compares digests).
WITH ins AS (
  INSERT INTO metering.provider_cost_facts (provider_cost_fact_ref, provider_cost_fact_digest, work_ref, attempt_number, fencing_token,
    execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key, currency, amount, fact_body)
  VALUES (@ref, @digest, @work_ref, @attempt_number, @fencing_token, @attempt_id, @deployment_id, @dimension_key, @currency, @amount::numeric, @body)
  ON CONFLICT (work_ref) DO NOTHING
  RETURNING provider_cost_fact_ref, provider_cost_fact_digest, fact_body
)
SELECT provider_cost_fact_ref, provider_cost_fact_digest, fact_body FROM ins
UNION ALL
SELECT provider_cost_fact_ref, provider_cost_fact_digest, fact_body FROM metering.provider_cost_facts WHERE work_ref = @work_ref
LIMIT 1;
