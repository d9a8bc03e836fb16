-- name: FenceUpdate
UPDATE metering.input_fences SET
  eligibility_fence_revision = @fence_revision,
  eligibility_fact_ref = @fact_ref, eligibility_fact_schema_version = @fact_schema_version,
  eligibility_fact_digest_algorithm_version = @fact_digest_algorithm_version, eligibility_fact_digest = @fact_digest,
  dispatch_disposition = @disposition,
  latest_eligibility_work_generation = @latest_generation,
  eligibility_trigger_digest = @trigger_digest,
  eligibility_source = coalesce(eligibility_source, @source::text),
  updated_at = now()
WHERE execution_attempt_id = @attempt_id;
