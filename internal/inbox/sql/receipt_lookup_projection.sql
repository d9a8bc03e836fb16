-- The stored receipt of one key of a projection consumer: the key includes
-- the frozen projection target (CON-1). {table} is the consumer's receipt
-- table, filled in by inbox.NewTable.
SELECT {{receipt_columns}}
  FROM {table}
 WHERE consumer_name = @consumer_name AND event_id = @event_id
   AND projection_name = @projection_name AND projection_version = @projection_version
