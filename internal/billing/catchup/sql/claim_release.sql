-- Makes an attempt's claim available again at @available_at (now after a
-- step that wrote nothing, later for a blocked backoff) if the claim is
-- still this attempt's.
UPDATE billing.settlement_catch_up_claims
SET available_at = @available_at
WHERE settlement_dimension_id = @settlement_dimension_id AND work_generation = @work_generation
  AND attempt_number = @attempt_number
