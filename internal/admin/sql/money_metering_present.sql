-- name: MoneyMeteringPresent
-- Whether this database holds the metering line's Work queue (only the
-- metering database does).
SELECT to_regclass('metering.pending_works') IS NOT NULL
   AND to_regclass('metering.work_blocks') IS NOT NULL
   AND to_regclass('metering.input_works') IS NOT NULL AS present
