-- name: RegistryLockDefinition
SELECT status FROM outbox.delivery_set_versions WHERE delivery_set_version = $1 FOR UPDATE
