-- to_jsonb renders timestamptz in the session time zone: archive bytes must not depend on it.
SET LOCAL TimeZone = 'UTC'
