-- Roles and column grants (OB-STORE-2, OB-STORE-6).
--
--   oceanway_producer        domain writers: append events and their delivery
--                            rows (identity columns only), read definitions.
--   oceanway_dispatcher      the outbox dispatcher: read everything, update only
--                            the delivery state columns, insert attempts and
--                            quarantine rows, execute the controlled function.
--   oceanway_outbox_definer  NOLOGIN owner of the SECURITY DEFINER functions:
--                            exactly the privileges those functions need.
--
-- Neither producer nor dispatcher may UPDATE outbox_events at all, so
-- `UPDATE outbox.outbox_events SET published_at = ...` fails with 42501.
-- The roles are cluster-wide and are normally created before migrations run
-- (migrate.EnsureRoles); the DO block keeps a bare goose run working too.

-- +goose Up
-- +goose StatementBegin
DO $do$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['oceanway_producer', 'oceanway_dispatcher', 'oceanway_outbox_definer'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- created concurrently by another migration
      END;
    END IF;
  END LOOP;
END
$do$;

-- Nothing is executable or visible by default.
REVOKE ALL ON SCHEMA outbox FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA outbox FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA outbox FROM PUBLIC;

GRANT USAGE ON SCHEMA outbox TO oceanway_producer, oceanway_dispatcher, oceanway_outbox_definer;

-- Trigger functions run as the invoking role; the ones below only compute
-- from the outbox tables.
GRANT EXECUTE ON FUNCTION
  outbox.activation_lock_key(),
  outbox.reject_delete(),
  outbox.reject_update(),
  outbox.delivery_set_versions_before_update(),
  outbox.delivery_set_versions_before_insert(),
  outbox.projection_versions_before_update(),
  outbox.outbox_events_before_insert(),
  outbox.outbox_events_before_update(),
  outbox.deliveries_before_update(),
  outbox.deliveries_notify(),
  outbox.quarantine_before_update()
  TO oceanway_producer, oceanway_dispatcher, oceanway_outbox_definer;

-- The definer: reads everything, sets published_at, share-locks the active
-- definition.
GRANT SELECT ON ALL TABLES IN SCHEMA outbox TO oceanway_outbox_definer;
GRANT UPDATE (published_at) ON outbox.outbox_events TO oceanway_outbox_definer;
GRANT UPDATE (status) ON outbox.delivery_set_versions TO oceanway_outbox_definer;
GRANT INSERT ON outbox.destination_bindings TO oceanway_outbox_definer;
ALTER FUNCTION outbox.lock_active_definition() SECURITY DEFINER;
ALTER FUNCTION outbox.lock_active_definition() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.all_mandatory_acknowledged(uuid) OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.delivery_set_members_before_insert() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.prove_definition() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.prove_delivery_set() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.deliveries_before_insert() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.quarantine_before_insert() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.prove_quarantine() OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.bind_destination(text, text, text, text, text) OWNER TO oceanway_outbox_definer;
ALTER FUNCTION outbox.record_publication(uuid, text, text, uuid, uuid, text, text, text, text, text, text, text)
  OWNER TO oceanway_outbox_definer;
GRANT EXECUTE ON FUNCTION
  outbox.lock_active_definition(),
  outbox.all_mandatory_acknowledged(uuid),
  outbox.delivery_set_members_before_insert(),
  outbox.prove_definition(),
  outbox.prove_delivery_set(),
  outbox.deliveries_before_insert(),
  outbox.quarantine_before_insert(),
  outbox.prove_quarantine()
  TO oceanway_producer, oceanway_dispatcher;

-- Producer: append only.
GRANT SELECT ON outbox.delivery_set_versions, outbox.delivery_set_members,
  outbox.projection_versions, outbox.projection_pointers TO oceanway_producer;
GRANT INSERT (event_id, event_type, schema_version,
  delivery_set_version, delivery_set_definition_schema_version,
  delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
  aggregate_type, aggregate_id, aggregate_revision,
  tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
  event_envelope, event_payload, event_envelope_digest_algorithm_version, event_envelope_sha256, occurred_at)
  ON outbox.outbox_events TO oceanway_producer;
GRANT INSERT (event_id, delivery_set_version, destination, consumer_name,
  expected_receipt_type, expected_receipt_schema_version,
  required_projection_name, required_projection_version, mandatory)
  ON outbox.outbox_deliveries TO oceanway_producer;

-- Dispatcher: deliveries, attempts, quarantine and the controlled function.
GRANT SELECT ON ALL TABLES IN SCHEMA outbox TO oceanway_dispatcher;
GRANT UPDATE (status, available_at, lease_owner, lease_token, lease_expires_at, current_attempt_id,
  attempt_count, last_attempt_at, delivered_at, last_error_code, last_error_ref,
  ack_consumer_name, ack_receipt_type, ack_receipt_key, ack_receipt_schema_version,
  ack_receipt_digest_algorithm_version, ack_receipt_digest,
  ack_event_envelope_digest_algorithm_version, ack_event_envelope_sha256)
  ON outbox.outbox_deliveries TO oceanway_dispatcher;
GRANT INSERT ON outbox.outbox_delivery_attempt_starts, outbox.outbox_delivery_attempt_finishes,
  outbox.outbox_quarantine TO oceanway_dispatcher;
GRANT EXECUTE ON FUNCTION
  outbox.record_publication(uuid, text, text, uuid, uuid, text, text, text, text, text, text, text)
  TO oceanway_dispatcher;
-- +goose StatementEnd

