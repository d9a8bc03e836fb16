-- Exact-id lookups of the read-only admin page and `oceanway inspect`
-- (run id, reservation id) without scanning outbox_events.

-- +goose Up
-- +goose StatementBegin
CREATE INDEX outbox_events_payload_run_id ON outbox.outbox_events ((event_payload ->> 'runId'));
CREATE INDEX outbox_events_payload_reservation_id ON outbox.outbox_events ((event_payload ->> 'billingReservationId'));
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP INDEX outbox.outbox_events_payload_run_id;
DROP INDEX outbox.outbox_events_payload_reservation_id;
-- +goose StatementEnd
