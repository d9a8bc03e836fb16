-- Current settlement inputs Billing cannot settle as they stand: waiting
-- for provider evidence, or needing reconciliation (partial index
-- settlement_input_snapshots_unsettleable, then the Current pointer by key).
SELECT count(*) FILTER (WHERE s.reconciliation_state = 'awaiting_evidence')::float8,
       count(*) FILTER (WHERE s.reconciliation_state = 'reconciliation_required')::float8
  FROM metering.settlement_input_snapshots s
  JOIN metering.settlement_input_current c
    ON c.settlement_dimension_id = s.settlement_dimension_id AND c.state_version = s.state_version
 WHERE s.reconciliation_state <> 'not_required';
