-- The deferred delivery-set proof in one pass: the activation lock and the
-- active/applicable check in one statement, the three counts in another.
-- Same semantics as 00002 (OB-APPEND-2, DS-9); fewer statements per event.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.prove_delivery_set() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_active     boolean;
  v_applicable boolean;
  v_members    integer;
  v_deliveries integer;
  v_matched    integer;
BEGIN
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM pg_advisory_xact_lock_shared(outbox.activation_lock_key());
    SELECT v.status = 'active',
           v.applicable_events @> jsonb_build_array(jsonb_build_object(
             'eventType', NEW.event_type, 'eventSchemaVersion', NEW.schema_version))
      INTO v_active, v_applicable
      FROM outbox.delivery_set_versions v
     WHERE v.delivery_set_version = NEW.delivery_set_version;
  ELSE
    -- share-locks the active row: a snapshot older than an activation fails with 40001
    SELECT true,
           v.applicable_events @> jsonb_build_array(jsonb_build_object(
             'eventType', NEW.event_type, 'eventSchemaVersion', NEW.schema_version))
      INTO v_active, v_applicable
      FROM outbox.lock_active_definition() a
      JOIN outbox.delivery_set_versions v USING (delivery_set_version)
     WHERE a.delivery_set_version = NEW.delivery_set_version;
  END IF;
  -- The event's foreign key makes the whole quadruple equal to this row's.
  IF v_active IS NOT TRUE THEN
    RAISE EXCEPTION 'outbox: event % froze delivery set definition % which is not the active definition',
      NEW.event_id, NEW.delivery_set_version USING ERRCODE = 'OW006';
  END IF;
  IF NOT v_applicable THEN
    RAISE EXCEPTION 'outbox: event % pair %/% is not applicable in definition %',
      NEW.event_id, NEW.event_type, NEW.schema_version, NEW.delivery_set_version USING ERRCODE = 'OW006';
  END IF;

  SELECT (SELECT count(*) FROM outbox.delivery_set_members m
           WHERE m.delivery_set_version = NEW.delivery_set_version AND m.event_type = NEW.event_type
             AND m.schema_version = NEW.schema_version AND m.mandatory),
         count(*),
         count(*) FILTER (WHERE m.destination IS NOT NULL)
    INTO v_members, v_deliveries, v_matched
    FROM outbox.outbox_deliveries d
    LEFT JOIN outbox.delivery_set_members m
      ON m.delivery_set_version = NEW.delivery_set_version AND m.event_type = NEW.event_type
     AND m.schema_version = NEW.schema_version AND m.destination = d.destination AND m.mandatory
     AND d.mandatory
     AND d.delivery_set_version = m.delivery_set_version
     AND d.consumer_name = m.consumer_name
     AND d.expected_receipt_type = m.expected_receipt_type
     AND d.expected_receipt_schema_version = m.expected_receipt_schema_version
     AND d.required_projection_name IS NOT DISTINCT FROM m.projection_name
     AND d.required_projection_version IS NOT DISTINCT FROM m.projection_version
   WHERE d.event_id = NEW.event_id;
  IF v_matched <> v_members OR v_deliveries <> v_members THEN
    RAISE EXCEPTION 'outbox: event % delivery set mismatch: % mandatory members, % delivery rows, % matching',
      NEW.event_id, v_members, v_deliveries, v_matched USING ERRCODE = 'OW004';
  END IF;
  RETURN NULL;
END
$fn$;
ALTER FUNCTION outbox.prove_delivery_set() OWNER TO oceanway_outbox_definer;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
SELECT 1; -- 00002's version is equivalent; keep this one
-- +goose StatementEnd
