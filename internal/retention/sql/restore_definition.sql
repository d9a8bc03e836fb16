-- Restore drill: one archived definition document into the scratch
-- database (triggers off: session_replication_role = replica). Bindings,
-- versions and members shared by several manifests are inserted once.
WITH doc AS (SELECT @document::jsonb AS j), b AS (
  INSERT INTO outbox.destination_bindings
  SELECT r.* FROM doc, jsonb_populate_recordset(NULL::outbox.destination_bindings, doc.j->'bindings') r
  ON CONFLICT DO NOTHING
), v AS (
  INSERT INTO outbox.delivery_set_versions
  SELECT r.* FROM doc, jsonb_populate_record(NULL::outbox.delivery_set_versions,
                         (doc.j->'version') || '{"status": "registered"}'::jsonb) r
  ON CONFLICT DO NOTHING
)
INSERT INTO outbox.delivery_set_members
SELECT r.* FROM doc, jsonb_populate_recordset(NULL::outbox.delivery_set_members, doc.j->'members') r
ON CONFLICT DO NOTHING
