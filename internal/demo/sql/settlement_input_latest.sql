-- name: SettlementInputLatest
-- The newest settlement input of a dimension on the metering database
-- (primary key, newest first) and whether Billing may settle on it.
SELECT state_version, reconciliation_state
FROM metering.settlement_input_snapshots
WHERE settlement_dimension_id = $1
ORDER BY state_version DESC
LIMIT 1;
