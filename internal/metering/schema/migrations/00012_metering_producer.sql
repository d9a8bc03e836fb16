-- This database is the metering fact store: the outbox refuses any pair another
-- boundary produces (outbox migration 00091, SQLSTATE OWP01).

-- +goose Up
-- +goose StatementBegin
SELECT outbox.declare_producer('metering');
-- +goose StatementEnd
