-- name: FencePeek
-- The worker's bootstrap read of the input fence (no lock; the processing
-- transaction re-checks the generation under the lock).
SELECT eligibility_fence_revision, eligibility_fact_ref, eligibility_fact_schema_version,
       eligibility_fact_digest_algorithm_version, eligibility_fact_digest, dispatch_disposition,
       latest_eligibility_work_generation, eligibility_trigger_digest, eligibility_source
FROM metering.input_fences WHERE execution_attempt_id = @attempt_id;
