-- name: RegistryActivate
UPDATE outbox.delivery_set_versions
   SET status = 'active', activated_at = now(), retired_at = NULL
 WHERE delivery_set_version = $1
