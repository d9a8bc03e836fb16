-- name: ActiveClaimGate
-- The active claim gate of a projection cutover (DS-8): every projector
-- transaction that applies a delivery (not a shadow build) holds this
-- transaction-scoped advisory lock shared; the cutover's final transaction
-- takes it exclusive, so it waits until the in-flight active applications
-- have committed (drain) and no new one starts until the switch commits
-- (stop). Loaded, not sqlc: batched with AggregateEnsure/AggregateLock.
SELECT pg_advisory_xact_lock_shared(@gate_key::bigint)
