-- name: BoundaryOutbox :many
-- Per destination and status: the deliveries of one boundary database, and
-- how many of them were ever claimed (an attempt start).
SELECT d.destination, d.status, count(*)::bigint AS deliveries,
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_starts s
                                       WHERE s.event_id = d.event_id AND s.destination = d.destination))::bigint AS claimed
  FROM outbox.outbox_deliveries d
 GROUP BY d.destination, d.status
 ORDER BY d.destination, d.status;

-- name: ForeignProducerEvents :one
-- Events whose exact pair another boundary produces (must be zero).
SELECT count(*)::bigint FROM outbox.outbox_events e
  JOIN outbox.pair_producers p ON p.event_type = e.event_type AND p.schema_version = e.schema_version
 WHERE p.producer <> @producer::text;

-- name: BoundaryEventCount :one
SELECT count(*)::bigint FROM outbox.outbox_events;

-- name: ExecutionDemoCounts :one
-- The Execution owner's end state: every run closed once, every closure
-- event's attemptCount equal to the run's eligibility events.
WITH closures AS (
  SELECT (event_payload->>'runId')::uuid AS run_id, (event_payload->>'attemptCount')::bigint AS attempt_count
    FROM outbox.outbox_events WHERE event_type = 'execution.run-finalization.closed@1'
), eligibility AS (
  SELECT (event_payload->>'runId')::uuid AS run_id, count(*) AS n
    FROM outbox.outbox_events WHERE event_type = 'execution.attempt-eligibility.finalized@1'
   GROUP BY 1
)
SELECT
  (SELECT count(*) FROM execution.run_execution_states)::bigint AS runs,
  (SELECT count(*) FROM execution.run_execution_states WHERE state = 'attempts_closed')::bigint AS closed_runs,
  (SELECT count(*) FROM execution.attempts)::bigint AS attempts,
  (SELECT count(*) FROM execution.eligibility_facts WHERE dispatch_disposition = 'dispatched')::bigint AS dispatched,
  (SELECT count(*) FROM execution.eligibility_facts WHERE dispatch_disposition = 'not_dispatched')::bigint AS not_dispatched,
  (SELECT count(*) FROM execution.run_finalizations WHERE attempt_count = 0)::bigint AS empty_closures,
  (SELECT count(*) FROM execution.run_execution_states r
    WHERE (SELECT count(*) FROM closures c WHERE c.run_id = r.run_id) <> 1)::bigint AS runs_without_exactly_one_closure_event,
  (SELECT count(*) FROM closures c LEFT JOIN eligibility e ON e.run_id = c.run_id
    WHERE c.attempt_count <> COALESCE(e.n, 0))::bigint AS closures_count_differs_from_eligibility_events;

-- name: GatewayDemoCounts :one
-- The Gateway owner's end state: every chain dense from 1.
SELECT
  (SELECT count(*) FROM gateway.dispatch_slots WHERE state = 'bound')::bigint AS bound,
  (SELECT count(*) FROM gateway.dispatch_slots WHERE state = 'terminal_rejected')::bigint AS rejected,
  (SELECT count(*) FROM gateway.dispatch_slots WHERE state = 'reserved')::bigint AS reserved,
  (SELECT count(*) FROM gateway.availability_currents)::bigint AS chains,
  (SELECT count(*) FROM gateway.availability_snapshots)::bigint AS snapshots,
  (SELECT count(*) FROM gateway.provider_evidence)::bigint AS evidence,
  (SELECT count(*) FROM (
     SELECT chain_id FROM gateway.availability_snapshots GROUP BY chain_id
     HAVING min(state_version) <> 1 OR max(state_version) <> count(*)) x)::bigint AS chains_not_dense,
  (SELECT count(*) FROM gateway.availability_currents c
    WHERE c.current_state_version <> (SELECT max(state_version) FROM gateway.availability_snapshots s WHERE s.chain_id = c.chain_id))::bigint AS pointers_not_at_head,
  (SELECT count(*) FROM gateway.availability_snapshots s
    WHERE NOT EXISTS (SELECT 1 FROM outbox.outbox_events e WHERE e.event_id = s.event_id))::bigint AS snapshots_without_event;

-- name: MeteringDemoCounts :one
-- The Metering worker's end state: settlement input chains dense from 1
-- with exact predecessors, each version with its event, the pointer at the
-- head; decisions, meter events, finishes and blocked work.
SELECT
  (SELECT count(*) FROM metering.settlement_input_snapshots)::bigint AS snapshots,
  (SELECT count(*) FROM metering.settlement_input_current)::bigint AS dimensions,
  (SELECT count(DISTINCT run_id) FROM metering.settlement_input_snapshots)::bigint AS runs_with_settlement_input,
  (SELECT count(*) FROM metering.settlement_input_current c JOIN metering.settlement_input_snapshots s
     ON s.settlement_dimension_id = c.settlement_dimension_id AND s.state_version = c.state_version
   WHERE s.reconciliation_state = 'awaiting_evidence')::bigint AS current_awaiting_evidence,
  (SELECT count(*) FROM metering.settlement_input_current c JOIN metering.settlement_input_snapshots s
     ON s.settlement_dimension_id = c.settlement_dimension_id AND s.state_version = c.state_version
   WHERE s.reconciliation_state = 'reconciliation_required')::bigint AS current_reconciliation_required,
  (SELECT count(*) FROM metering.eligibility_decisions WHERE decision = 'eligible')::bigint AS eligible_decisions,
  (SELECT count(*) FROM metering.eligibility_decisions WHERE decision = 'ineligible')::bigint AS ineligible_decisions,
  (SELECT count(*) FROM metering.meter_events)::bigint AS meter_events,
  (SELECT count(*) FROM metering.work_finishes WHERE outcome_state = 'applied')::bigint AS applied,
  (SELECT count(*) FROM metering.work_finishes WHERE outcome_state = 'superseded')::bigint AS superseded,
  (SELECT count(DISTINCT work_ref) FROM metering.work_blocks)::bigint AS blocked_works,
  (SELECT count(*) FROM metering.pending_works p WHERE p.lane_kind = 'eligibility_and_settlement_input'
     AND NOT EXISTS (SELECT 1 FROM metering.work_blocks b WHERE b.work_ref = p.work_ref))::bigint AS eligibility_work_open,
  (SELECT count(*) FROM metering.pending_works p WHERE p.lane_kind = 'provider_cost'
     AND NOT EXISTS (SELECT 1 FROM metering.work_blocks b WHERE b.work_ref = p.work_ref))::bigint AS cost_work_pending,
  (SELECT count(*) FROM metering.charge_dimension_awaits)::bigint AS dimensions_awaited,
  (SELECT count(*) FROM metering.charge_dimension_awaits a WHERE EXISTS (SELECT 1 FROM metering.settlement_input_current c
     WHERE c.execution_attempt_id = a.execution_attempt_id AND c.charge_dimension_key = a.charge_dimension_key))::bigint AS dimensions_awaited_committed,
  (SELECT count(*) FROM metering.attempt_charge_dimensions r, unnest(r.charge_dimension_keys) AS k(key)
    WHERE NOT EXISTS (SELECT 1 FROM metering.settlement_input_current c
      WHERE c.execution_attempt_id = r.execution_attempt_id AND c.charge_dimension_key = k.key))::bigint AS registered_dimensions_uncommitted,
  (SELECT count(*) FROM metering.provider_cost_facts)::bigint AS provider_cost_facts,
  (SELECT count(*) FROM metering.cost_processing_facts WHERE processing_outcome = 'waiting_for_evidence')::bigint AS cost_waiting_for_evidence,
  (SELECT count(*) FROM metering.cost_processing_facts WHERE processing_outcome = 'no_cost_evidence')::bigint AS cost_no_evidence,
  (SELECT count(*) FROM metering.cost_processing_facts WHERE processing_outcome = 'reconciliation_required')::bigint AS cost_reconciliation_required,
  (SELECT count(*) FROM (
     SELECT settlement_dimension_id FROM metering.settlement_input_snapshots GROUP BY settlement_dimension_id
     HAVING min(state_version) <> 1 OR max(state_version) <> count(*)) x)::bigint AS chains_not_dense,
  (SELECT count(*) FROM metering.settlement_input_snapshots s
    WHERE s.state_version > 1 AND NOT EXISTS (SELECT 1 FROM metering.settlement_input_snapshots p
      WHERE p.settlement_dimension_id = s.settlement_dimension_id AND p.state_version = s.state_version - 1
        AND p.snapshot_ref = s.predecessor_snapshot_ref))::bigint AS predecessors_not_exact,
  (SELECT count(*) FROM metering.settlement_input_current c
    WHERE c.state_version <> (SELECT max(state_version) FROM metering.settlement_input_snapshots s
      WHERE s.settlement_dimension_id = c.settlement_dimension_id))::bigint AS pointers_not_at_head,
  (SELECT count(*) FROM metering.settlement_input_snapshots s
    WHERE NOT EXISTS (SELECT 1 FROM outbox.outbox_events e
      WHERE e.event_type = 'metering.settlement-input.current-changed@1'
        AND e.aggregate_id = s.settlement_dimension_id::text AND e.aggregate_revision = s.state_version))::bigint AS snapshots_without_event;

-- name: MeteringOpenWork :one
-- Work the metering worker has still to finish, both lanes (blocked Work
-- waits for a fix and is reported, not waited for).
SELECT count(*)::bigint FROM metering.pending_works p
WHERE NOT EXISTS (SELECT 1 FROM metering.work_blocks b WHERE b.work_ref = p.work_ref);
