-- One batched INSERT commit of the limit measurement.
INSERT INTO limit_rows (payload) SELECT unnest(@payloads::text[])
