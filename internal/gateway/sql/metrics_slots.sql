-- Dispatch slots reserved and neither bound nor rejected yet, and the age
-- of the oldest (partial index dispatch_slots_reserved).
SELECT count(*)::float8, COALESCE(EXTRACT(EPOCH FROM now() - min(reserved_at)), 0)::float8
  FROM gateway.dispatch_slots
 WHERE state = 'reserved';
