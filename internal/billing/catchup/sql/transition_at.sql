-- Whether a dimension has a transition from a revision (a read by another
-- ref for the same step is conflicting, not not_found).
SELECT EXISTS (SELECT 1 FROM billing.settlement_transitions
               WHERE settlement_dimension_id = @settlement_dimension_id AND from_settlement_state_revision = @from_settlement_state_revision)
