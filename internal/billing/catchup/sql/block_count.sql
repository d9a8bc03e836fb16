-- How many times this Work generation was blocked (the backoff exponent);
-- bounded by the generation's attempts, read by the primary key prefix.
SELECT count(*) FROM billing.settlement_catch_up_blocks
WHERE settlement_dimension_id = @settlement_dimension_id AND work_generation = @work_generation
