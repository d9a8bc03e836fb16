-- +goose Up
-- +goose StatementBegin
-- Metering's getReservationSettlementInputs (platform API, issue 33; BI-1):
-- the Current settlement inputs of one billing reservation are found by its
-- settlement dimensions. Every version of a dimension names the same
-- reservation (the dimension id is derived from it, and the body identity
-- check ties the body to the columns), so the index holds version 1 only:
-- one entry per dimension, whatever the dimension's history. The read then
-- probes each dimension's pointer and its Current snapshot by their keys.
-- An index only: no schema-version change.
CREATE INDEX settlement_input_snapshots_reservation
  ON metering.settlement_input_snapshots (billing_reservation_id, settlement_dimension_id)
  WHERE state_version = 1;
-- +goose StatementEnd
