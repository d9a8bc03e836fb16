-- The guard both append inserts share: the frozen quadruple is the active
-- definition, read under the activation lock (taken shared here for the
-- rest of the transaction).
EXISTS (SELECT 1 FROM outbox.lock_active_definition() a
         WHERE a.delivery_set_version = @delivery_set_version
           AND a.delivery_set_definition_schema_version = @delivery_set_definition_schema_version
           AND a.delivery_set_definition_digest_algorithm_version = @delivery_set_definition_digest_algorithm_version
           AND a.delivery_set_definition_digest = @delivery_set_definition_digest)
