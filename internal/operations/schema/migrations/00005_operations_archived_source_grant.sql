-- The cutover reads the archived part of the projection source (RET-1 with
-- DS-8; outbox 00096 outbox.projection_archived_source_events) to refuse a
-- cutover over an archived range: the shadow build reads hot events only.

-- +goose Up
-- +goose StatementBegin
GRANT SELECT ON outbox.projection_archived_source_events TO oceanway_operations;
-- +goose StatementEnd
