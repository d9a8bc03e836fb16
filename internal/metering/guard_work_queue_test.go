package metering_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/metering"
)

// forgedWork is an INSERT of a Work of lane, as the input processor's
// work_insert.sql writes it, without its queue row.
const forgedWork = `INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version,
	work_digest, execution_attempt_id, lane_kind, gateway_deployment_id, source_evidence_dimension_key, work_generation,
	operation_id, trigger_digest, work_body)
	VALUES ($1, '1', 'jcs-sha256-v1', repeat('f', 64), $2::uuid, $3, $4, $5, $6,
	gen_random_uuid(), repeat('f', 64), '{}')`

// TestGuardClausesME013WorkCommittedWithQueueRow (ME013.work-not-queued,
// ME013.queue-lane-mismatch; docs/metering.md "Finality guards" ME013,
// migration 00016: a Work commits with its queue row). As
// oceanway_metering, the role that holds INSERT on metering.input_works
// and metering.pending_works for the input processor:
//   - ME013.work-not-queued: a Work of the provider-cost lane, and one of
//     the eligibility lane, committed without a queue row are refused at
//     COMMIT with ME013 (before 00016 they committed and were lost: never
//     claimed, never finished); nothing is stored;
//   - the same Work with its queue row inserted AFTER it in the same
//     transaction commits (the check is deferred);
//   - ME013.queue-lane-mismatch: a Work queued in the other lane's queue
//     (claimed only by the other lane's workers) is refused at COMMIT;
//   - the real input processor, as the same role, creates an eligibility
//     Work and a provider-cost Work: each commits with its queue row of its
//     own lane.
//
// (A Work with an attempt but no queue row is ME009.attempt-not-queued's:
// TestGuardClausesME009AttemptOnlyForQueuedWork.)
func TestGuardClausesME013WorkCommittedWithQueueRow(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3761)
	// the attempt's input fence (and its eligibility Work, generation 1)
	dispatched(t, b, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, "")) // the cost lane, generation 1
	before := count(t, b.pool, `SELECT count(*) FROM metering.input_works`)

	const unqueued = "without its queue row or a finish"
	for _, c := range []struct {
		ref, lane, dim string
		generation     int
	}{
		{"miw-unqueued-cost-3761", "provider_cost", costDim, 2},
		{"miw-unqueued-elig-3761", "eligibility_and_settlement_input", "", 2},
	} {
		err := commitAs(t, role, execStep(t, forgedWork, c.ref, a.attemptID, c.lane, deploymentOf(c.lane, a), c.dim, c.generation))
		requireRefused(t, err, metering.SQLStateWorkNotQueued, unqueued, "ME013.work-not-queued: "+c.lane)
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.input_works WHERE work_ref = $1`, c.ref), "nothing stored")
	}

	const mismatch = "queued in lane"
	err := commitAs(t, role,
		execStep(t, forgedWork, "miw-wrong-lane-3761", a.attemptID, "provider_cost", a.deployment, costDim, 2),
		execStep(t, `INSERT INTO metering.pending_works (work_ref, lane_kind) VALUES ($1, 'eligibility_and_settlement_input')`, "miw-wrong-lane-3761"))
	requireRefused(t, err, metering.SQLStateWorkNotQueued, mismatch, "ME013.queue-lane-mismatch")
	require.Equal(t, before, count(t, b.pool, `SELECT count(*) FROM metering.input_works`), "no forged Work stored")

	// The queue row may follow the Work in its transaction (deferred).
	require.NoError(t, commitAs(t, role,
		execStep(t, forgedWork, "miw-queued-3761", a.attemptID, "provider_cost", a.deployment, costDim, 2),
		execStep(t, `INSERT INTO metering.pending_works (work_ref, lane_kind) SELECT work_ref, lane_kind FROM metering.input_works WHERE work_ref = $1`,
			"miw-queued-3761")), "a Work with its queue row of its lane commits")

	// The real input processor, as the role: each new Work commits queued.
	c, err := metering.New(role, metering.Config{Inbox: inbox.Config{LockTimeout: time.Second}, Reads: b.owners})
	require.NoError(t, err)
	rb := &bundle{pool: b.pool, c: c, owners: b.owners}
	n := newAttempt(3762)
	dispatched(t, rb, n)
	rb.ack(t, n.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, ""))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM metering.input_works w
		JOIN metering.pending_works q ON q.work_ref = w.work_ref AND q.lane_kind = w.lane_kind
		WHERE w.execution_attempt_id = $1::uuid`, n.attemptID), "an eligibility and a provider-cost Work, each queued in its lane")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.input_works w
		WHERE NOT EXISTS (SELECT 1 FROM metering.pending_works q WHERE q.work_ref = w.work_ref)
		  AND NOT EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = w.work_ref)`), "no Work is unqueued and unfinished")
}

// deploymentOf is the gateway deployment a Work of lane carries: the
// eligibility lane's Works carry none.
func deploymentOf(lane string, a attemptFixture) string {
	if lane == "provider_cost" {
		return a.deployment
	}
	return ""
}
