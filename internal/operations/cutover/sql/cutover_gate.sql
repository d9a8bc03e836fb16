-- name: CutoverGate
-- Cutover step 4: stop and drain the active claim — the exclusive side of the
-- projector's active claim gate (projector/sql/active_claim_gate.sql), held
-- until the final transaction commits.
SELECT pg_advisory_xact_lock(@gate_key::bigint)
