-- One Work generation's stored body.
SELECT work_body
FROM billing.settlement_catch_up_works
WHERE settlement_dimension_id = @settlement_dimension_id AND work_generation = @work_generation
