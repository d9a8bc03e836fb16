-- The transition that produced a dimension's state revision (the
-- causation of the next one).
SELECT transition_ref, transition_schema_version, transition_digest_algorithm_version, transition_digest
FROM billing.settlement_transitions
WHERE settlement_dimension_id = @settlement_dimension_id AND to_settlement_state_revision = @to_settlement_state_revision
