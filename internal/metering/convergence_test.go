package metering_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/metering"
)

// The five inputs of one attempt (issue 14 "Done when"): its eligibility,
// usage revisions 1 and 2 of one charge dimension (2 corrects the measured
// quantity) and cost revisions 1 (pending) and 2 (available).
const (
	inEligibility = iota
	inUsage1
	inUsage2
	inCost1
	inCost2
	inputCount
)

var inputNames = [inputCount]string{"E", "U1", "U2", "C1", "C2"}

// orderReads serves the worker both lanes' owner reads: the event-bound
// reads of fakeOwners and the cost bootstrap read of costReads.
type orderReads struct {
	*fakeOwners
	*costReads
}

// orderRun is one order of the five inputs in one interleaving mode:
// workerEach runs the metering worker after every delivery (and at the
// end), otherwise the worker runs only once every input was delivered.
type orderRun struct {
	n          int
	order      [inputCount]int
	workerEach bool
}

func (r orderRun) name() string {
	names := make([]string, 0, inputCount)
	for _, i := range r.order {
		names = append(names, inputNames[i])
	}
	mode := "worker-at-end"
	if r.workerEach {
		mode = "worker-after-each"
	}
	return strings.Join(names, ",") + "/" + mode
}

// permutations returns every order of 0..n-1 (n! of them).
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for pos := 0; pos <= len(p); pos++ {
			q := make([]int, 0, n)
			q = append(q, p[:pos]...)
			q = append(q, n-1)
			q = append(q, p[pos:]...)
			out = append(out, q)
		}
	}
	return out
}

// orderShard is one database running its share of the orders one after the
// other, each order on its own execution attempt. The worker claims any
// Work of the database, so orders of one shard never overlap: "worker at
// the end" then really means no worker ran during that order's deliveries.
type orderShard struct {
	*bundle
	reads  *costReads
	worker *metering.Worker
}

func newOrderShard(t *testing.T) *orderShard {
	t.Helper()
	b := workerSetup(t)
	reads := newCostReads(b.owners)
	w, err := metering.NewWorker(b.pool, metering.WorkerConfig{Processor: metering.ProcessorConfig{Reads: orderReads{b.owners, reads}},
		Concurrency: 1, Lease: time.Hour})
	require.NoError(t, err)
	return &orderShard{bundle: b, reads: reads, worker: w}
}

func (s *orderShard) inputs(a attemptFixture) [inputCount]*envelope.Envelope {
	s.reads.mu.Lock()
	s.reads.attempts[a.attemptID] = a
	s.reads.mu.Unlock()
	return [inputCount]*envelope.Envelope{
		inEligibility: a.eligibility(s.owners, contract.DispositionDispatched),
		inUsage1:      a.availability(s.owners, usage, dimIn, 1, contract.AvailabilityAvailable, ""),
		inUsage2:      a.availability(s.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""),
		inCost1:       a.availability(s.owners, cost, costDim, 1, contract.AvailabilityPending, ""),
		inCost2:       a.availability(s.owners, cost, costDim, 2, contract.AvailabilityAvailable, ""),
	}
}

// consume delivers one event through the real inbox path and returns the
// stored receipt body.
func (s *orderShard) consume(t *testing.T, e *envelope.Envelope, transportAttempt int) []byte {
	t.Helper()
	d := delivery(e)
	d.AttemptNumber = transportAttempt
	res, err := s.c.Consume(t.Context(), d)
	require.NoError(t, err, "%s %s", e.EventType, e.EventID)
	r, err := receipt.DecodeMeteringInputProcessorConsumerReceipt(res.ReceiptBody)
	require.NoError(t, err)
	require.NoError(t, r.VerifyDigest())
	return res.ReceiptBody
}

// run delivers the order's inputs, each followed by a crash after the
// consumer's commit and before the ack (the dispatcher delivers the same
// event again, a new transport attempt: the consumer must answer the same
// receipt), runs the worker as the mode says, redelivers every event once
// more at the end (a late redelivery after the lanes moved on: still the
// first receipt, already_observed froze it) and returns the attempt's
// fingerprints.
func (s *orderShard) run(t *testing.T, r orderRun) (current, history string) {
	t.Helper()
	a := newAttempt(r.n)
	events := s.inputs(a)
	first := map[int][]byte{}
	for _, i := range r.order {
		first[i] = s.consume(t, events[i], 1)
		// crash after commit, before ack: the same event again.
		require.Equal(t, string(first[i]), string(s.consume(t, events[i], 2)), "%s: redelivered %s", r.name(), inputNames[i])
		if r.workerEach {
			s.drain(t)
		}
	}
	s.drain(t)
	for i, e := range events {
		require.Equal(t, string(first[i]), string(s.consume(t, e, 3)), "%s: late redelivery of %s", r.name(), inputNames[i])
	}
	require.Zero(t, count(t, s.pool, `SELECT count(*) FROM metering.pending_works p JOIN metering.input_works w USING (work_ref)
		WHERE w.execution_attempt_id = $1`, a.attemptID), "%s: every Work of the attempt finished", r.name())
	require.Zero(t, count(t, s.pool, `SELECT count(*) FROM metering.work_blocks b JOIN metering.input_works w USING (work_ref)
		WHERE w.execution_attempt_id = $1`, a.attemptID), "%s: nothing blocked", r.name())
	current, history = fingerprint(t, s.pool, a)
	return current, history
}

// drain runs the worker (real claim → process → finish, both lanes) until
// no Work is claimable.
func (s *orderShard) drain(t *testing.T) {
	t.Helper()
	require.NoError(t, s.worker.RunOnce(t.Context()))
}

// normalizer replaces what names the attempt (its ids, the owner objects'
// refs and their digests, its settlement dimension) by placeholders, so
// fingerprints of different attempts compare.
func normalizer(a attemptFixture) *strings.Replacer {
	var pairs [][2]string
	for _, k := range []string{"attempt", "run", "step", "account", "reservation"} {
		pairs = append(pairs, [2]string{id(k, a.n), "<" + k + ">"})
	}
	pairs = append(pairs, [2]string{dimensionOf(a, dimIn), "<dimension " + dimIn + ">"})
	refs := []string{fmt.Sprintf("eef-%d-%s", a.n, contract.DispositionDispatched)}
	for _, p := range []string{"aem", "ram", "arb", "grs"} {
		refs = append(refs, fmt.Sprintf("%s-%d", p, a.n))
	}
	for _, sv := range []int{1, 2} {
		for _, p := range []string{"gas", "gpe"} {
			refs = append(refs, fmt.Sprintf("%s-%d-%s-%s-%d", p, a.n, usage, dimIn, sv), fmt.Sprintf("%s-%d-%s-%s-%d", p, a.n, cost, costDim, sv))
		}
	}
	for _, ref := range refs {
		norm := strings.Replace(ref, fmt.Sprintf("-%d", a.n), "-#", 1)
		pairs = append(pairs, [2]string{ref, norm}, [2]string{quad(ref).Digest, "sha256(" + norm + ")"})
	}
	// Longest first: no placeholder may eat the prefix of a longer name.
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	flat := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		flat = append(flat, p[0], p[1])
	}
	return strings.NewReplacer(flat...)
}

func quadString(q strict.Quadruple) string {
	return strings.Join([]string{q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest}, "/")
}

// snapshotContent is a snapshot's committed business content: everything
// the content digest covers except what the worker mints per write (the
// snapshot's own ref and digest, the MeterEvent's ref and digest, the
// recording time). The MeterEvent is represented by its measured quantity.
// decisionContent is the decision without the minted quadruple of its
// stored row (its digest hashes the attempt's own ids).
func decisionContent(d settlement.Decision) any {
	return struct{ Decision, RuleVersion, ReasonCode string }{d.Decision, d.RuleVersion, d.ReasonCode}
}

func snapshotContent(s *settlement.Snapshot, meterQuantity string) string {
	basis := s.Basis
	evidence := "none"
	if basis.ProviderEvidence != nil {
		evidence = quadString(*basis.ProviderEvidence)
	}
	meter := "none"
	if s.MeterEvent != nil {
		meter = "meter-event quantity " + meterQuantity
	}
	return fmt.Sprintf("tenant=%+v account=%s reservation=%s run=%s step=%s attempt=%s key=%s dimension=%s fact=%s disposition=%s manifest=%s "+
		"decision=%+v meter=%s basis=%s/%s/%s/%s/%s/v%d/%s/%s/%s pricing=%s/%s/%s/%s economic=%+v quantity=%s unit=%s net=%s reconciliation=%s",
		s.Tenant, s.BillingAccountID, s.BillingReservationID, s.RunID, s.RunStepID, s.ExecutionAttemptID, s.ChargeDimensionKey,
		s.SettlementDimensionID, quadString(s.EligibilityFact), s.DispatchDisposition, quadString(s.AttemptManifest), decisionContent(s.Decision), meter,
		basis.Kind, basis.GatewayDeploymentID, quadString(basis.AttemptRouteBinding), quadString(basis.GatewayRouteSnapshot),
		quadString(basis.CurrentAvailability), basis.AvailabilityStateVersion, basis.AvailabilityState, evidence, quadString(basis.NotDispatchedFact),
		s.Pricing.PriceBookVersion, s.Pricing.UnitPrice, s.Pricing.BillingPolicyVersion, quadString(s.Pricing.RunAdmissionManifest),
		s.EconomicIdentity, s.Quantity, s.Unit, s.TargetNetAmount, s.ReconciliationState)
}

// fingerprint returns the attempt's state in two parts, normalized (see
// normalizer).
//
// current is what every order and every interleaving must agree on: the
// input fence's eligibility fact, the usage watermark and cost lane (state
// version, availability, state), the cost lane's coordination state at its
// latest generation, the provider cost facts, the eligibility decisions,
// and each settlement dimension's Current snapshot content.
//
// history adds the settlement input chains (dimension, state version,
// predecessor version and whether it links the exact previous snapshot,
// content) and the metering outbox's events for them (aggregate, revision,
// event type, billing delivery). It legitimately depends on when the worker
// ran: a worker that applied usage revision 1 before revision 2 arrived
// wrote version 1 (1000 tokens) and then version 2 (2000), one that ran
// only after both wrote version 1 (2000) alone; so history must agree
// across all orders of one "worker at the end" run, and in every run be
// dense from 1 with exact predecessors (requireDenseChains).
//
// Left out everywhere, because they count how the state was reached: Work
// generations and attempts, fence and lane revisions, superseded and
// applied finishes, cost processing facts of earlier generations, the
// receipts (each freezes the lane state its first processing saw; the test
// checks instead that a redelivery returns that same receipt), trigger
// digests (hashes over the attempt's own ids; TestConformance compares them
// across orders of one attempt), and minted refs, digests and timestamps.
func fingerprint(t *testing.T, pool *pgxpool.Pool, a attemptFixture) (current, history string) {
	t.Helper()
	ctx := t.Context()
	var lanes string
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT concat_ws(E'\n',
		 (SELECT concat_ws('|', 'fence', eligibility_fact_ref, eligibility_fact_digest, dispatch_disposition)
		    FROM metering.input_fences WHERE execution_attempt_id = $1),
		 (SELECT string_agg(concat_ws('|', 'usage', gateway_deployment_id, evidence_dimension_key, state_version,
		     current_availability_ref, current_availability_digest, availability_state), ';' ORDER BY gateway_deployment_id, evidence_dimension_key)
		    FROM metering.usage_watermarks WHERE execution_attempt_id = $1),
		 (SELECT string_agg(concat_ws('|', 'cost', l.gateway_deployment_id, l.source_evidence_dimension_key, l.state_version,
		     l.current_availability_ref, l.current_availability_digest, l.availability_state, c.state, c.availability_state, c.state_reason_code),
		     ';' ORDER BY l.gateway_deployment_id, l.source_evidence_dimension_key)
		    FROM metering.cost_lanes l LEFT JOIN metering.cost_lane_coordination c
		      ON c.execution_attempt_id = l.execution_attempt_id AND c.gateway_deployment_id = l.gateway_deployment_id
		     AND c.source_evidence_dimension_key = l.source_evidence_dimension_key AND c.work_generation = l.latest_work_generation
		   WHERE l.execution_attempt_id = $1),
		 (SELECT string_agg(concat_ws('|', 'cost-fact', gateway_deployment_id, source_evidence_dimension_key, currency, amount), ';'
		     ORDER BY gateway_deployment_id, source_evidence_dimension_key, amount)
		    FROM metering.provider_cost_facts WHERE execution_attempt_id = $1),
		 (SELECT string_agg(DISTINCT concat_ws('|', 'decision', decision, decision_rule_version), ';')
		    FROM metering.eligibility_decisions WHERE execution_attempt_id = $1))`, a.attemptID).Scan(&lanes))

	rows, err := pool.Query(ctx, `
		SELECT s.settlement_dimension_id::text, s.charge_dimension_key, s.state_version, s.predecessor_state_version,
		  s.predecessor_snapshot_ref IS NOT DISTINCT FROM p.snapshot_ref, s.snapshot_body, coalesce(m.quantity::text, ''),
		  c.state_version = s.state_version,
		  (SELECT string_agg(concat_ws('|', e.event_type, e.aggregate_revision,
		      EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id AND d.destination = 'billing_settlement_catch_up')), ';')
		     FROM outbox.outbox_events e WHERE e.aggregate_id = s.settlement_dimension_id::text AND e.aggregate_revision = s.state_version)
		FROM metering.settlement_input_snapshots s
		LEFT JOIN metering.settlement_input_snapshots p
		  ON p.settlement_dimension_id = s.settlement_dimension_id AND p.state_version = s.state_version - 1
		LEFT JOIN metering.settlement_input_current c ON c.settlement_dimension_id = s.settlement_dimension_id
		LEFT JOIN metering.meter_events m ON m.meter_event_ref = s.snapshot_body::jsonb -> 'meterEventHead' ->> 'meterEventRef'
		WHERE s.execution_attempt_id = $1
		ORDER BY s.charge_dimension_key, s.state_version`, a.attemptID)
	require.NoError(t, err)
	defer rows.Close()
	var cur, hist []string
	for rows.Next() {
		var dim, key, body, meterQuantity string
		var version int64
		var predecessor *int64
		var linked, isCurrent bool
		var events *string
		require.NoError(t, rows.Scan(&dim, &key, &version, &predecessor, &linked, &body, &meterQuantity, &isCurrent, &events))
		s, err := settlement.Decode([]byte(body))
		require.NoError(t, err)
		content := snapshotContent(s, meterQuantity)
		pred := "none"
		if predecessor != nil {
			pred = fmt.Sprintf("v%d linked=%t", *predecessor, linked)
		}
		ev := "no event"
		if events != nil {
			ev = *events
		}
		hist = append(hist, fmt.Sprintf("chain|%s|%s|v%d|predecessor %s|%s|%s", dim, key, version, pred, ev, content))
		if isCurrent {
			cur = append(cur, fmt.Sprintf("current|%s|%s|%s", dim, key, content))
		}
	}
	require.NoError(t, rows.Err())
	norm := normalizer(a)
	current = norm.Replace(lanes + "\n" + strings.Join(cur, "\n"))
	history = norm.Replace(current + "\n" + strings.Join(hist, "\n"))
	return current, history
}

// TestMET_EveryOrderCrashAfterCommitConverges (issue 14 "Done when", ME-1,
// ME-2, MET-*): for every one of the 120 orders of {eligibility, usage
// revisions 1 and 2, cost revisions 1 and 2}, each delivered through the
// real inbox path with a crash after the consumer's commit and before the
// ack, and with the metering worker (real claim, process, finish, both
// lanes) run either after every delivery or only at the end, the attempt
// converges: every redelivery returns the first receipt, every Work
// finishes, nothing blocks, the committed business facts' fingerprint is
// one for all 240 runs, the full history (chains and their events) is one
// for the 120 "worker at the end" runs, and every chain is dense from 1
// with exact predecessors and one event per version.
func TestMET_EveryOrderCrashAfterCommitConverges(t *testing.T) {
	t.Parallel()
	var runs []orderRun
	for _, workerEach := range []bool{false, true} {
		for _, p := range permutations(inputCount) {
			r := orderRun{n: 5000 + len(runs), workerEach: workerEach}
			copy(r.order[:], p)
			runs = append(runs, r)
		}
	}
	require.Len(t, runs, 240)

	const shards = 8
	type result struct{ current, history string }
	results := make([]result, len(runs))
	// Each shard is its own database; their orders run concurrently on
	// real sessions, within a shard one after the other.
	t.Run("shards", func(t *testing.T) {
		for sh := range shards {
			t.Run(fmt.Sprint(sh), func(t *testing.T) {
				t.Parallel()
				s := newOrderShard(t)
				for i := sh; i < len(runs); i += shards {
					results[i].current, results[i].history = s.run(t, runs[i])
				}
				requireDenseChains(t, s.pool)
			})
		}
	})
	if t.Failed() {
		return
	}

	want := results[0]
	require.Contains(t, want.current, "cost-fact|gw-deploy-1|"+costDim+"|", "the available cost revision wrote its fact")
	require.Contains(t, want.current, "quantity=2000", "the corrected usage revision is current")
	require.Contains(t, want.history, "|v1|predecessor none|metering.settlement-input.current-changed@1|1|t|", "version 1 with its event and billing delivery")
	corrected := 0
	for i, r := range runs {
		require.Equal(t, want.current, results[i].current, "%s: committed business facts differ from %s", r.name(), runs[0].name())
		require.NotContains(t, results[i].history, "linked=false", "%s: every predecessor is the exact previous version", r.name())
		require.NotContains(t, results[i].history, "no event", "%s: every version has its event", r.name())
		if !r.workerEach {
			require.Equal(t, want.history, results[i].history, "%s: history differs from %s", r.name(), runs[0].name())
			continue
		}
		// The fixture registers both usage revisions with the Gateway before
		// any delivery (the Gateway is at revision 2 throughout), so the
		// Gateway's operation-bound Current Receipt never says revision 1 is
		// current (metering review finding 5): however the worker
		// interleaves, usage revision 1 is never applied and the chain has
		// one version (a v1 Work waits, nothing written, until U2's event
		// supersedes it).
		twoVersions := strings.Contains(results[i].history, "|v2|predecessor v1 linked=true|")
		require.False(t, twoVersions, "%s: chain length", r.name())
		if twoVersions {
			corrected++
		}
	}
	require.Zero(t, corrected, "no order applies a usage revision the Gateway no longer holds current")
	t.Logf("%d runs converge (%d with a corrected two-version chain); fingerprint:\n%s", len(runs), corrected, want.history)
}
