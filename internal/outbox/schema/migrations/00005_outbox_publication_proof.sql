-- OB-PUB-1 by construction: a transaction that acknowledges the last open
-- mandatory delivery of an event must also set its published_at (through
-- outbox.record_publication) before it commits. A deferred constraint
-- trigger re-proves it at COMMIT for every delivery that became
-- acknowledged in the transaction (SQLSTATE OW015), so no code path can
-- leave "all mandatory deliveries acknowledged but published_at NULL".

-- +goose Up
-- +goose StatementBegin
-- The proof also proves the ack envelope
-- digest of every delivery that became acknowledged: it equals the event's
-- stored digest (OW019). Checked at COMMIT, after the dispatcher's own
-- outbox.record_publication, which reports a wrong digest first (OW009).
CREATE FUNCTION outbox.prove_publication() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_unpublished boolean;
  v_digest_ok   boolean;
BEGIN
  SELECT e.published_at IS NULL,
         e.event_envelope_digest_algorithm_version = NEW.ack_event_envelope_digest_algorithm_version
           AND e.event_envelope_sha256 = NEW.ack_event_envelope_sha256
    INTO v_unpublished, v_digest_ok
    FROM outbox.outbox_events e WHERE e.event_id = NEW.event_id;
  IF /* guard OW019.ack-envelope-digest */ v_digest_ok IS NOT TRUE THEN
    RAISE EXCEPTION 'outbox: delivery %/% became acknowledged with an envelope digest that is not the event''s stored one',
      NEW.event_id, NEW.destination USING ERRCODE = 'OW019';
  END IF;
  IF /* guard OW015.published-at-not-recorded */ v_unpublished
     AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                      WHERE d.event_id = NEW.event_id AND d.mandatory AND d.status <> 'acknowledged') THEN
    RAISE EXCEPTION 'outbox: every mandatory delivery of event % is acknowledged but published_at was not recorded', NEW.event_id
      USING ERRCODE = 'OW015';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER outbox_deliveries_publication_proof AFTER UPDATE ON outbox.outbox_deliveries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.status = 'acknowledged' AND OLD.status <> 'acknowledged' AND NEW.mandatory)
  EXECUTE FUNCTION outbox.prove_publication();
GRANT EXECUTE ON FUNCTION outbox.prove_publication() TO oceanway_dispatcher;
-- +goose StatementEnd

