-- Guard clauses (issue 37): gateway.prove_snapshot_advance (migration
-- 00005) raised three SQLSTATEs from one condition (whatever
-- gateway.advance_complete answered). Each answer is now its own clause, so
-- that each can be disabled alone and proven by its own test. Same
-- SQLSTATEs, same message, same behaviour: at COMMIT an availability
-- snapshot needs
--   GW006 its gateway.evidence-availability.current-changed@1 created by the
--         same transaction,
--   GW007 the chain's pointer at it,
--   GW005 a pointer naming the snapshot's attempt, deployment, kind and
--         dimension.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION gateway.prove_snapshot_advance() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  code text;
BEGIN
  code := gateway.advance_complete(NEW);
  IF /* guard GW006.advance-without-event */ code = 'GW006' THEN
    RAISE EXCEPTION 'gateway: availability snapshot % of chain % is not a complete advance at COMMIT (event in the same transaction, pointer at it, chain identity): %',
      NEW.current_availability_ref, NEW.chain_id, code
      USING ERRCODE = 'GW006';
  END IF;
  IF /* guard GW007.snapshot-not-head */ code = 'GW007' THEN
    RAISE EXCEPTION 'gateway: availability snapshot % of chain % is not a complete advance at COMMIT (event in the same transaction, pointer at it, chain identity): %',
      NEW.current_availability_ref, NEW.chain_id, code
      USING ERRCODE = 'GW007';
  END IF;
  IF /* guard GW005.pointer-identity */ code = 'GW005' THEN
    RAISE EXCEPTION 'gateway: availability snapshot % of chain % is not a complete advance at COMMIT (event in the same transaction, pointer at it, chain identity): %',
      NEW.current_availability_ref, NEW.chain_id, code
      USING ERRCODE = 'GW005';
  END IF;
  RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
-- forward-only
