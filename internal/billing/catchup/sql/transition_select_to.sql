-- The step that produced a dimension's state revision (the causation of
-- the next transition): a transition, or a late settlement command result.
SELECT 'settlement_transition' AS step_kind, transition_ref, transition_schema_version,
       transition_digest_algorithm_version, transition_digest
FROM billing.settlement_transitions
WHERE settlement_dimension_id = @settlement_dimension_id AND to_settlement_state_revision = @to_settlement_state_revision
UNION ALL
SELECT 'late_settlement_command_result', result_ref, result_schema_version, result_digest_algorithm_version, result_digest
FROM billing.late_settlement_command_results
WHERE settlement_dimension_id = @settlement_dimension_id AND to_settlement_state_revision = @to_settlement_state_revision
