-- name: CostProcessingInsert
-- Insert-or-compare of the Work's one ProviderCostAvailabilityProcessingFact@1.
WITH ins AS (
  INSERT INTO metering.cost_processing_facts (processing_ref, processing_digest, work_ref, attempt_number, fencing_token, availability_state,
    processing_outcome, provider_cost_fact_ref, processing_body)
  VALUES (@ref, @digest, @work_ref, @attempt_number, @fencing_token, @availability_state, @outcome, @cost_fact_ref, @body)
  ON CONFLICT (work_ref) DO NOTHING
  RETURNING processing_ref, processing_digest, processing_body
)
SELECT processing_ref, processing_digest, processing_body FROM ins
UNION ALL
SELECT processing_ref, processing_digest, processing_body FROM metering.cost_processing_facts WHERE work_ref = @work_ref
LIMIT 1;
