-- Takes the activation lock shared for the rest of the transaction and
-- returns the active definition quadruple (no row: nothing is active).
-- Here and not in sqlc: sqlc cannot see the OUT columns of the function.
SELECT delivery_set_version, delivery_set_definition_schema_version,
       delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest
  FROM outbox.lock_active_definition()
