-- The operation summary's two keys lead with the identifier (issue 35).
--
-- Both keys led with (projection_name, projection_version), which every row
-- of a projection shares. A plan made while the table was small (a fresh
-- projection version, a fresh install) could take the reservation key's
-- prefix for a lookup by run (or the other way round) and filter the rest,
-- so each projector lookup read the whole projection: about 400 buffers per
-- call at 1,000 runs, growing with every run. Led by run_id and by
-- billing_reservation_id, no prefix of either key matches a projection
-- without the identifier, so every plan of the projector's lookups is a
-- probe. Same columns, same uniqueness; ON CONFLICT infers keys by column
-- set, so no statement changes.

-- +goose Up
-- +goose StatementBegin
ALTER TABLE operations.operation_summaries
  DROP CONSTRAINT operation_summaries_pkey,
  ADD CONSTRAINT operation_summaries_pkey PRIMARY KEY (run_id, projection_name, projection_version),
  DROP CONSTRAINT operation_summaries_projection_name_projection_version_bill_key,
  ADD CONSTRAINT operation_summaries_reservation_key UNIQUE (billing_reservation_id, projection_name, projection_version);
-- +goose StatementEnd
