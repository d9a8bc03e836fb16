-- One single-row INSERT commit of the limit measurement.
INSERT INTO limit_rows (payload) VALUES (@payload)
