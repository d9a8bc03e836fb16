-- name: ReservationStateInsert :exec
INSERT INTO billing.reservation_states (billing_reservation_id, billing_account_id, run_id, economic_identity,
    reserved_amount, state, created_at)
VALUES (@billing_reservation_id, @billing_account_id, @run_id, @economic_identity, @reserved_amount::numeric, 'reserved',
    @created_at);

-- name: ReservationLock :one
-- The reservation with the admission facts a commit binds (tenant, manifest,
-- the wallet.reserved event it follows).
SELECT s.billing_reservation_id, s.billing_account_id, s.run_id, s.economic_identity, s.reserved_amount::text AS reserved_amount,
       s.state, r.tenant_kind, r.tenant_id, r.workspace_id, r.project_id, r.correlation_id,
       r.run_admission_manifest_ref, r.run_admission_manifest_schema_version,
       r.run_admission_manifest_digest_algorithm_version, r.run_admission_manifest_digest, a.wallet_reserved_event_id
  FROM billing.reservation_states s
  JOIN admission.runs r ON r.run_id = s.run_id
  JOIN admission.reservations a ON a.billing_reservation_id = s.billing_reservation_id
 WHERE s.billing_reservation_id = @billing_reservation_id
   FOR UPDATE OF s;

-- name: ReservationFinalize :exec
UPDATE billing.reservation_states
   SET state = @state, settled_amount = @settled_amount::numeric, released_amount = @released_amount::numeric,
       committed_ref = @committed_ref, finalized_at = @finalized_at
 WHERE billing_reservation_id = @billing_reservation_id;

-- name: PostReservationHold :exec
-- The hold's lines derive from the reservation (migration 00040).
SELECT billing.post_reservation_hold(@billing_reservation_id::uuid, @posting_group_id::uuid, @at::timestamptz);

-- name: PostFinalization :exec
-- The finalization's lines derive from the amounts (migration 00040); at
-- commit the group proves the committed fact naming it.
SELECT billing.post_finalization(@billing_reservation_id::uuid, @posting_group_id::uuid, @settled_amount::numeric,
    @released_amount::numeric, @at::timestamptz);

-- name: PostSettlementTransition :exec
-- A refund transition's lines derive from the transition (migration 00040).
SELECT billing.post_settlement_transition(@transition_ref::text, @posting_group_id::uuid);
