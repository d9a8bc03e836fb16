-- name: ChargeDimensionsInsert
-- Insert-or-find the registered charge dimension set of a dispatched
-- attempt (the set its attempt manifest froze); returns the stored row so
-- the caller compares it (a different stored set is a conflict).
WITH ins AS (
  INSERT INTO metering.attempt_charge_dimensions (execution_attempt_id, attempt_execution_manifest_ref,
    attempt_execution_manifest_digest, charge_dimension_registry_version, charge_dimension_keys)
  VALUES (@attempt_id, @manifest_ref, @manifest_digest, @registry_version, @keys)
  ON CONFLICT (execution_attempt_id) DO NOTHING
  RETURNING attempt_execution_manifest_ref, attempt_execution_manifest_digest, charge_dimension_registry_version, charge_dimension_keys
)
SELECT * FROM ins
UNION ALL
SELECT attempt_execution_manifest_ref, attempt_execution_manifest_digest, charge_dimension_registry_version, charge_dimension_keys
  FROM metering.attempt_charge_dimensions WHERE execution_attempt_id = @attempt_id
LIMIT 1;
