SELECT pg_advisory_unlock(hashtext('oceanway.retention.archive'))
