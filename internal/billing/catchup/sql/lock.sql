-- Serializes every catch-up transaction of one settlement dimension: the
-- consumer, the finalization's fence opening and the worker's commit.
SELECT pg_advisory_xact_lock(hashtextextended('billing.catch_up|' || @settlement_dimension_id::text, 0))
