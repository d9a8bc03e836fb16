-- Whether the dimension's catch-up fence exists (no lock: the finalization
-- that creates it holds its own fence lock, which the caller takes next).
SELECT EXISTS (SELECT 1 FROM billing.settlement_catch_up_fences WHERE settlement_dimension_id = @settlement_dimension_id)
