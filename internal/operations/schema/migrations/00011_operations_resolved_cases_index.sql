-- The admin page's and `oceanway case list --state resolved`'s newest
-- resolved cases: a partial index in that order, so the list stops at its
-- limit instead of sorting every resolved case of the version.

-- +goose Up
-- +goose StatementBegin
CREATE INDEX finalization_cases_resolved ON operations.finalization_cases
  (projection_name, projection_version, resolved_at DESC) WHERE state = 'resolved';
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP INDEX operations.finalization_cases_resolved;
-- +goose StatementEnd
