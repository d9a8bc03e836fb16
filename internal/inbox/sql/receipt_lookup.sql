-- The stored receipt of one key. {table} is the consumer's receipt table,
-- filled in by inbox.NewTable.
SELECT {{receipt_columns}}
  FROM {table}
 WHERE consumer_name = @consumer_name AND event_id = @event_id
