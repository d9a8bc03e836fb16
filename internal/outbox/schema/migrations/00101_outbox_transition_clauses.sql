-- The delivery transition guard, one refusal per clause (issue 37).
--
-- outbox.deliveries_prove_transitions (00006, 00097) is redefined with the
-- same checks, order, messages and SQLSTATE (OW019), so that each refusal
-- is its own CASE branch carrying its clause marker (docs/guard-clauses.md)
-- and a test can tell each one apart from its absence. Two changes, both
-- removing a condition no write can reach because another check refuses
-- it first:
--
--   - a claim's fresh lease token. The claim branch refused a lease token
--     equal to the pending row's (n.lease_token IS NOT DISTINCT FROM
--     o.lease_token). A pending row never holds a token (it is born without
--     one, OW012; it returns to pending only without its lease,
--     OW019.retry-keeps-lease; a pending row changes no lease column,
--     OW019.pending-changes-lease), and a leased row always does (the table
--     CHECK outbox_deliveries_leased_has_lease), so that comparison is never
--     true. The rule "a claim takes a fresh lease token" is owned by
--     OW019.claim-without-start: the lease token must be the one of an
--     attempt start inserted by this transaction, and a token names one
--     start only (UNIQUE outbox_delivery_attempt_starts_token). The fresh
--     attempt id stays its own clause, OW019.claim-reuses-attempt: the
--     attempt start check alone does not refuse a re-claim, in the
--     transaction that started, finished (retry) and released an attempt,
--     of that same attempt id and token (its start is this transaction's).
--   - the ack's frozen member. The ack branch refused an ack consumer,
--     receipt type or schema version other than the frozen member's. An
--     acknowledged row carries all three (CHECK outbox_deliveries_ack_complete)
--     and each equal to its frozen column (CHECK
--     outbox_deliveries_ack_matches_member, 00001), checked on the row
--     before this AFTER trigger runs: the table CHECK owns the rule
--     (SQLSTATE 23514), and the branch is gone.
--
-- The RAISE itself is the clause OW019.unproven-transition (any reason
-- found). Nothing else changes: the plan settings, the lateral probes and
-- the transitions it proves are those of 00097.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.deliveries_prove_transitions() RETURNS trigger
LANGUAGE plpgsql
-- Planned once per session (no parameters): probes only, and no JIT (00097).
SET enable_seqscan = off
SET jit = off
AS $fn$
DECLARE
  v record;
BEGIN
  SELECT x.event_id, x.destination, x.old_status, x.new_status, x.reason INTO v
    FROM (
      SELECT n.event_id, n.destination, o.status AS old_status, n.status AS new_status,
        CASE
          WHEN o.status = 'pending' AND n.status = 'pending' THEN
            CASE WHEN /* guard OW019.pending-changes-lease */
                      (n.lease_owner, n.lease_token, n.lease_expires_at, n.current_attempt_id, n.attempt_count, n.last_attempt_at)
                      IS DISTINCT FROM
                      (o.lease_owner, o.lease_token, o.lease_expires_at, o.current_attempt_id, o.attempt_count, o.last_attempt_at)
              THEN 'a pending delivery changes no lease or attempt column' END
          WHEN o.status = 'pending' AND n.status = 'leased' THEN
            CASE
              -- A fresh lease token: OW019.claim-without-start owns it (see the header).
              WHEN /* guard OW019.claim-reuses-attempt */ n.current_attempt_id IS NOT DISTINCT FROM o.current_attempt_id
                THEN 'a claim takes a fresh attempt id and lease token'
              WHEN /* guard OW019.claim-counts-not-one */ n.attempt_count <> o.attempt_count + 1
                THEN 'a claim counts exactly one more attempt'
              WHEN /* guard OW019.claim-lease-ended */ n.lease_expires_at <= statement_timestamp()
                THEN 'a claim takes a lease that ends in the future'
              WHEN /* guard OW019.claim-without-start */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> n.lease_token OR NOT (s.xmin = pg_current_xact_id()::xid)
                THEN 'a lease needs the attempt start of exactly that attempt id and lease token, in the same transaction'
            END
          WHEN /* guard OW019.pending-skips-lease */ o.status = 'pending' THEN n.status || ' only from leased'
          WHEN o.status <> 'leased' OR n.status = o.status AND n IS NOT DISTINCT FROM o THEN NULL -- terminal, unchanged
          WHEN /* guard OW019.leased-attempt-changes */ (n.current_attempt_id, n.attempt_count) IS DISTINCT FROM (o.current_attempt_id, o.attempt_count)
            THEN 'the current attempt of a leased delivery changes only by a claim'
          WHEN n.status = 'leased' THEN
            CASE
              WHEN /* guard OW019.renewal-changes-owner */ (n.lease_owner, n.lease_token) IS DISTINCT FROM (o.lease_owner, o.lease_token)
                THEN 'a renewal keeps the lease owner and token'
              WHEN /* guard OW019.renewal-of-expired-lease */ n.lease_expires_at > o.lease_expires_at AND o.lease_expires_at <= statement_timestamp()
                THEN 'an expired lease cannot be renewed'
            END
          WHEN n.status = 'acknowledged' THEN
            CASE
              WHEN /* guard OW019.ack-changes-lease */ (n.lease_owner, n.lease_token, n.lease_expires_at) IS DISTINCT FROM (o.lease_owner, o.lease_token, o.lease_expires_at)
                THEN 'an ack keeps the lease it was fenced by'
              WHEN /* guard OW019.ack-after-lease-expiry */ o.lease_expires_at <= statement_timestamp()
                THEN 'an ack needs a lease that has not expired'
              -- The ack consumer, receipt type and schema version equal to the
              -- frozen member's: the table CHECK outbox_deliveries_ack_matches_member
              -- owns it (see the header).
              WHEN /* guard OW019.ack-without-finish */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.outcome IS DISTINCT FROM 'acknowledged'
                THEN 'an ack needs an acknowledged finish of the attempt its lease fenced'
            END
          WHEN n.status = 'pending' THEN
            CASE
              WHEN /* guard OW019.retry-keeps-lease */ num_nonnulls(n.lease_owner, n.lease_token, n.lease_expires_at) <> 0
                THEN 'a delivery returns to pending without its lease'
              WHEN /* guard OW019.retry-without-finish */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS NULL
                OR f.retry_disposition NOT IN ('retry_scheduled', 'reclaimable')
                THEN 'pending after a lease needs a retry_scheduled or reclaimable finish of that attempt'
            END
          WHEN n.status = 'quarantined' THEN
            CASE
              WHEN /* guard OW019.quarantine-without-finish */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS DISTINCT FROM 'quarantined'
                THEN 'a quarantine needs a quarantined finish of the leased attempt'
            END
        END AS reason
        FROM old_rows o
        JOIN new_rows n ON n.event_id = o.event_id AND n.destination = o.destination
        -- The attempt start of the claimed (pending → leased) or fenced
        -- attempt, and its finish when the lease ends: a primary-key probe
        -- per changed row (OFFSET 0: never flattened into a join that a plan
        -- could hash over a scan of the attempt tables).
        LEFT JOIN LATERAL (
          SELECT s0.attempt_id, s0.event_id, s0.destination, s0.lease_token, s0.xmin
            FROM outbox.outbox_delivery_attempt_starts s0
           WHERE s0.attempt_id = CASE WHEN o.status = 'pending' THEN n.current_attempt_id ELSE o.current_attempt_id END
             AND (o.status, n.status) NOT IN (('pending', 'pending'), ('leased', 'leased'))
          OFFSET 0) s ON true
        LEFT JOIN LATERAL (
          SELECT f0.outcome, f0.retry_disposition
            FROM outbox.outbox_delivery_attempt_finishes f0
           WHERE f0.attempt_id = s.attempt_id AND o.status = 'leased' AND n.status <> 'leased'
          OFFSET 0) f ON true
    ) x
   WHERE x.reason IS NOT NULL
   LIMIT 1;
  IF /* guard OW019.unproven-transition */ FOUND THEN
    RAISE EXCEPTION 'outbox: delivery %/% % → %: %', v.event_id, v.destination, v.old_status, v.new_status, v.reason
      USING ERRCODE = 'OW019';
  END IF;
  RETURN NULL;
END
$fn$;
-- +goose StatementEnd
