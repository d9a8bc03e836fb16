-- The claim reads only claimable Work (review finding 8; "no hot-path
-- statement may read more as history grows"). The claim indexes of 00003
-- and 00004 started with queued_at, so every leased, backed-off or blocked
-- Work was walked and filtered out by lease_until (a sequential scan with
-- many leased rows). Keyed by lease_until first, the claimable rows
-- (lease_until <= now()) are one index range; the claims order by
-- (lane_kind,) lease_until, queued_at, work_ref to read it in index order (new Work has
-- lease '-infinity', so it still comes first, oldest first).

-- +goose Up
-- +goose StatementBegin
CREATE INDEX pending_works_lane_claim ON metering.pending_works (lane_kind, lease_until, queued_at, work_ref);
CREATE INDEX pending_works_claim ON metering.pending_works (lease_until, queued_at, work_ref);
DROP INDEX metering.pending_works_lane_queued;
DROP INDEX metering.pending_works_queued;
-- +goose StatementEnd
