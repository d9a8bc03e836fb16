-- receipt_insert for a projection consumer: the key includes the frozen
-- projection target (CON-1).
INSERT INTO {table} (consumer_name, event_id, {{receipt_columns}}, projection_name, projection_version)
VALUES (@consumer_name, @event_id, {{receipt_values}}, @projection_name, @projection_version)
ON CONFLICT DO NOTHING
RETURNING receipt_ref
