-- One `retention archive` per database at a time (session lock, held for the
-- whole command): the sweep of unrecorded manifests must not see another
-- command's manifest between its write and its controlled delete.
SELECT pg_try_advisory_lock(hashtext('oceanway.retention.archive'))
