-- The limit measurement's table: the bare minimum of a durable message row.
CREATE TABLE limit_rows (id bigserial PRIMARY KEY, payload text NOT NULL)
