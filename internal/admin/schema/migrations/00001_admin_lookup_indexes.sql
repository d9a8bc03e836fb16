-- Exact-id lookups of the read-only admin page and `oceanway inspect`
-- (run id, reservation id) without scanning outbox_events
-- (sql/events_by_reference.sql). The outbox engine knows no domain payload
-- keys; the line that owns the lookup owns the indexes on them. They index
-- the outbox table of every producer database, so this line applies after
-- the outbox line on all four boundaries.

-- +goose Up
-- +goose StatementBegin
CREATE INDEX outbox_events_lookup_run_id ON outbox.outbox_events ((event_payload ->> 'runId'));
CREATE INDEX outbox_events_lookup_reservation_id ON outbox.outbox_events ((event_payload ->> 'billingReservationId'));
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP INDEX outbox.outbox_events_lookup_run_id;
DROP INDEX outbox.outbox_events_lookup_reservation_id;
-- +goose StatementEnd
