-- name: SettlementInputLatest
-- The newest settlement input of each dimension in $1 on the metering
-- database (one primary-key probe per dimension, newest first) and whether
-- Billing may settle on it: one statement per poll, whatever the number of
-- pending catch-up fences.
SELECT d.settlement_dimension_id::text, s.state_version, s.reconciliation_state
FROM unnest($1::uuid[]) AS d(settlement_dimension_id)
CROSS JOIN LATERAL (
  SELECT state_version, reconciliation_state
  FROM metering.settlement_input_snapshots
  WHERE settlement_dimension_id = d.settlement_dimension_id
  ORDER BY state_version DESC
  LIMIT 1) s;
