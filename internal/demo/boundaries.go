package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/demo/dbsqlc"
	"github.com/oceanway/core/internal/outbox/invariant"
	"github.com/oceanway/core/internal/server"
)

// consumerOwner names the owner whose consumer serves a destination (the
// ones that do not exist yet are named in the summary).
var consumerOwner = map[route.Destination]string{
	route.CoreOperations:                 "Operations",
	route.MeteringInputProcessor:         "Metering",
	route.BillingFinalizationCoordinator: "Billing",
	route.BillingSettlementCatchUp:       "Billing",
}

// DestinationCount is one (destination, status) row of a boundary outbox.
type DestinationCount struct {
	Destination string `json:"destination"`
	Status      string `json:"status"`
	Deliveries  int64  `json:"deliveries"`
	Claimed     int64  `json:"claimed"`
	Served      bool   `json:"served"`
}

// BoundaryReport is one boundary database's outbox at the end of the demo.
type BoundaryReport struct {
	Boundary     string             `json:"boundary"`
	Events       int64              `json:"events"`
	Destinations []DestinationCount `json:"destinations"`
}

// ExecutionReport is the Execution owner's end state.
type ExecutionReport struct {
	Runs, ClosedRuns, Attempts, Dispatched, NotDispatched, EmptyClosures int64
}

// GatewayReport is the Gateway owner's end state.
type GatewayReport struct {
	Bound, Rejected, Chains, Snapshots, Evidence int64
}

// MeteringReport is the Metering worker's end state.
type MeteringReport struct {
	Snapshots               int64 `json:"snapshots"`
	Dimensions              int64 `json:"dimensions"`
	RunsWithSettlementInput int64 `json:"runsWithSettlementInput"`
	CurrentAwaitingEvidence int64 `json:"currentAwaitingEvidence"`
	// DimensionsAwaited counts registered charge dimensions an eligibility
	// Work found without Gateway usage yet (awaiting_evidence, issue 32
	// part 4); DimensionsAwaitedCommitted those of them later settled.
	DimensionsAwaited             int64   `json:"dimensionsAwaited"`
	DimensionsAwaitedCommitted    int64   `json:"dimensionsAwaitedCommitted"`
	CurrentReconciliationRequired int64   `json:"currentReconciliationRequired"`
	EligibleDecisions             int64   `json:"eligibleDecisions"`
	IneligibleDecisions           int64   `json:"ineligibleDecisions"`
	MeterEvents                   int64   `json:"meterEvents"`
	Applied                       int64   `json:"applied"`
	Superseded                    int64   `json:"superseded"`
	BlockedWorks                  int64   `json:"blockedWorks"`
	CostWorkPending               int64   `json:"costWorkPending"`
	ProviderCostFacts             int64   `json:"providerCostFacts"`
	CostWaitingForEvidence        int64   `json:"costWaitingForEvidence"`
	CostNoEvidence                int64   `json:"costNoEvidence"`
	CostReconciliationRequired    int64   `json:"costReconciliationRequired"`
	WorksPerSecond                float64 `json:"worksPerSecond"`
}

// PendingNote says plainly which deliveries wait for a consumer that does
// not exist yet.
type PendingNote struct {
	Boundary    string `json:"boundary"`
	Destination string `json:"destination"`
	Owner       string `json:"owner"`
	Pending     int64  `json:"pending"`
}

// summarizeBoundaries reports every boundary outbox and proves, per
// boundary: the outbox invariants (drained for served destinations, the
// quiescent ones everywhere), every event in its producer's database,
// deliveries to consumers that do not exist yet pending and never claimed,
// and the Execution and Gateway end states.
func summarizeBoundaries(ctx context.Context, pools server.Pools, served []route.Destination, cfg Config, s *Summary) error {
	q := dbsqlc.New()
	isServed := map[string]bool{}
	for _, d := range served {
		isServed[string(d)] = true
	}
	// Labels stay within the table's first column (40 characters).
	var touched, foreignEvents int64
	var touchedAt, foreignAt []string
	for _, b := range boundary.All {
		pool, ok := pools[b]
		if !ok {
			continue
		}
		rows, err := q.BoundaryOutbox(ctx, pool)
		if err != nil {
			return fmt.Errorf("demo %s outbox: %w", b, err)
		}
		events, err := q.BoundaryEventCount(ctx, pool)
		if err != nil {
			return fmt.Errorf("demo %s events: %w", b, err)
		}
		br := BoundaryReport{Boundary: string(b), Events: events}
		var servedOpen, unservedTouched int64
		for _, r := range rows {
			dc := DestinationCount{Destination: r.Destination, Status: r.Status, Deliveries: r.Deliveries, Claimed: r.Claimed, Served: isServed[r.Destination]}
			br.Destinations = append(br.Destinations, dc)
			switch {
			case dc.Served && r.Status != "acknowledged":
				servedOpen += r.Deliveries
			case !dc.Served && (r.Status != "pending" || r.Claimed > 0):
				unservedTouched += r.Deliveries
			case !dc.Served:
				s.Pending = append(s.Pending, PendingNote{Boundary: string(b), Destination: r.Destination,
					Owner: consumerOwner[route.Destination(r.Destination)], Pending: r.Deliveries})
			}
		}
		s.Boundaries = append(s.Boundaries, br)
		if unservedTouched > 0 {
			touched += unservedTouched
			touchedAt = append(touchedAt, string(b))
		}
		foreign, err := q.ForeignProducerEvents(ctx, pool, string(b))
		if err != nil {
			return fmt.Errorf("demo %s producers: %w", b, err)
		}
		if foreign > 0 {
			foreignEvents += foreign
			foreignAt = append(foreignAt, string(b))
		}
		if b == boundary.Core {
			continue // core's drained invariants are checked above
		}
		// The other outboxes: every quiescent invariant, and every delivery
		// to a served destination acknowledged.
		report, err := invariant.Evaluate(ctx, pool)
		if err != nil {
			return fmt.Errorf("demo %s: %w", b, err)
		}
		var broken []string
		for _, c := range report.In(invariant.Quiescent) {
			if !c.OK() {
				broken = append(broken, c.Name+": "+c.Detail())
			}
		}
		if servedOpen > 0 {
			broken = append(broken, fmt.Sprintf("%d deliveries to served destinations not acknowledged", servedOpen))
		}
		s.check(string(b)+"_outbox_invariants", len(broken) == 0, strings.Join(broken, "; "))
	}
	s.count("waiting_deliveries_unclaimed", touched,
		fmt.Sprintf("deliveries to destinations without a consumer were claimed or are not pending (%s)", strings.Join(touchedAt, ", ")))
	s.count("events_in_owner_database", foreignEvents,
		fmt.Sprintf("events whose pair another boundary produces (%s)", strings.Join(foreignAt, ", ")))
	if exec, ok := pools[boundary.Execution]; ok && cfg.Scenario != nil {
		c, err := q.ExecutionDemoCounts(ctx, exec)
		if err != nil {
			return fmt.Errorf("demo execution: %w", err)
		}
		s.Execution = &ExecutionReport{Runs: c.Runs, ClosedRuns: c.ClosedRuns, Attempts: c.Attempts, Dispatched: c.Dispatched,
			NotDispatched: c.NotDispatched, EmptyClosures: c.EmptyClosures}
		closedOnce := c.Runs == int64(cfg.Runs+cfg.PriorRuns) && c.ClosedRuns == c.Runs && c.RunsWithoutExactlyOneClosureEvent == 0
		s.check("every_run_closed_once", closedOnce, failDetail(closedOnce,
			fmt.Sprintf("%d admitted, %d runs, %d closed, %d without exactly one closure event", cfg.Runs+cfg.PriorRuns, c.Runs, c.ClosedRuns, c.RunsWithoutExactlyOneClosureEvent)))
		s.count("closure_count_is_eligibility", c.ClosuresCountDiffersFromEligibilityEvents,
			"closure events whose attemptCount differs from the run's eligibility events")
		eligible := c.Dispatched+c.NotDispatched == c.Attempts
		s.check("every_attempt_eligible", eligible, failDetail(eligible, fmt.Sprintf("%d attempts, %d eligibility facts", c.Attempts, c.Dispatched+c.NotDispatched)))
	}
	if gw, ok := pools[boundary.Gateway]; ok && cfg.Scenario != nil {
		c, err := q.GatewayDemoCounts(ctx, gw)
		if err != nil {
			return fmt.Errorf("demo gateway: %w", err)
		}
		s.Gateway = &GatewayReport{Bound: c.Bound, Rejected: c.Rejected, Chains: c.Chains, Snapshots: c.Snapshots, Evidence: c.Evidence}
		s.count("every_slot_terminal", c.Reserved, "slots left reserved")
		s.count("chains_dense_from_1", c.ChainsNotDense, "availability chains with a gap or not starting at 1")
		s.count("chain_pointer_at_head", c.PointersNotAtHead, "current pointers not at their chain's last version")
		s.count("one_event_per_snapshot", c.SnapshotsWithoutEvent, "snapshots without their current-changed event")
	}
	if m, ok := pools[boundary.Metering]; ok && (cfg.Metering != nil || cfg.workersElsewhere()) {
		c, err := q.MeteringDemoCounts(ctx, m)
		if err != nil {
			return fmt.Errorf("demo metering: %w", err)
		}
		s.Metering = &MeteringReport{Snapshots: c.Snapshots, Dimensions: c.Dimensions, RunsWithSettlementInput: c.RunsWithSettlementInput,
			CurrentAwaitingEvidence: c.CurrentAwaitingEvidence, CurrentReconciliationRequired: c.CurrentReconciliationRequired,
			DimensionsAwaited: c.DimensionsAwaited, DimensionsAwaitedCommitted: c.DimensionsAwaitedCommitted,
			EligibleDecisions: c.EligibleDecisions, IneligibleDecisions: c.IneligibleDecisions, MeterEvents: c.MeterEvents,
			Applied: c.Applied, Superseded: c.Superseded, BlockedWorks: c.BlockedWorks, CostWorkPending: c.CostWorkPending,
			ProviderCostFacts: c.ProviderCostFacts, CostWaitingForEvidence: c.CostWaitingForEvidence, CostNoEvidence: c.CostNoEvidence,
			CostReconciliationRequired: c.CostReconciliationRequired}
		if s.DurationSeconds > 0 {
			s.Metering.WorksPerSecond = float64(c.Applied+c.Superseded) / s.DurationSeconds
		}
		s.count("settlement_input_dense_from_1", c.ChainsNotDense, "settlement dimensions whose chain has a gap or does not start at 1")
		s.count("settlement_input_predecessors", c.PredecessorsNotExact, "snapshots whose predecessor is not the exact previous version")
		s.count("settlement_pointer_at_head", c.PointersNotAtHead, "current pointers not at their chain's last version")
		s.count("one_event_per_settlement_input", c.SnapshotsWithoutEvent, "snapshots without their current-changed event")
		s.count("eligibility_work_finished", c.EligibilityWorkOpen, "eligibility Work neither finished nor blocked")
		s.count("registered_dimensions_settled", c.RegisteredDimensionsUncommitted, "registered charge dimensions of an attempt without a settlement input")
		s.count("provider_cost_work_finished", c.CostWorkPending, "provider cost Work neither finished nor blocked")
		half := 2*c.RunsWithSettlementInput >= int64(cfg.Runs+cfg.PriorRuns)
		s.check("half_runs_settlement_input", half, failDetail(half,
			fmt.Sprintf("%d of %d runs have settlement input", c.RunsWithSettlementInput, cfg.Runs+cfg.PriorRuns)))
	}
	return nil
}

func failDetail(ok bool, detail string) string {
	if ok {
		return ""
	}
	return detail
}

// writeBoundaries prints the per-boundary part of the summary.
func (s *Summary) writeBoundaries(row func(string, any)) {
	if m := s.Scenario; m != nil {
		row("scenario: runs (empty / multi-attempt)", fmt.Sprintf("%d (%d / %d)", m.Runs, m.EmptyRuns, m.MultiAttemptRuns))
		row("scenario: attempts", fmt.Sprintf("%d: %d bound, %d rejected before binding, %d rerouted", m.Attempts, m.Bound, m.RejectedBeforeBinding, m.Rerouted))
		row("scenario: provider observations", m.Observations)
	}
	if e := s.Execution; e != nil {
		row("execution: runs closed", fmt.Sprintf("%d of %d (%d with attemptCount 0)", e.ClosedRuns, e.Runs, e.EmptyClosures))
		row("execution: eligibility", fmt.Sprintf("%d dispatched, %d not_dispatched", e.Dispatched, e.NotDispatched))
	}
	if g := s.Gateway; g != nil {
		row("gateway: slots", fmt.Sprintf("%d bound, %d terminal_rejected", g.Bound, g.Rejected))
		row("gateway: availability", fmt.Sprintf("%d chains, %d snapshots, %d evidence", g.Chains, g.Snapshots, g.Evidence))
	}
	if m := s.Metering; m != nil {
		row("metering: settlement input", fmt.Sprintf("%d snapshots on %d dimensions, %d runs", m.Snapshots, m.Dimensions, m.RunsWithSettlementInput))
		row("metering: current not settleable", fmt.Sprintf("%d awaiting evidence, %d reconciliation required", m.CurrentAwaitingEvidence, m.CurrentReconciliationRequired))
		row("metering: registered dimensions", fmt.Sprintf("%d awaited evidence when their attempt's usage Work ran, %d of them later committed",
			m.DimensionsAwaited, m.DimensionsAwaitedCommitted))
		row("metering: decisions", fmt.Sprintf("%d eligible, %d ineligible; %d meter events", m.EligibleDecisions, m.IneligibleDecisions, m.MeterEvents))
		row("metering: work", fmt.Sprintf("%d applied, %d superseded, %d blocked (%.0f finished/s)", m.Applied, m.Superseded, m.BlockedWorks, m.WorksPerSecond))
		row("metering: provider cost", fmt.Sprintf("%d cost facts; %d waiting for evidence, %d no cost evidence, %d reconciliation required (Metering diagnostics only, incomplete: no Operations queue)",
			m.ProviderCostFacts, m.CostWaitingForEvidence, m.CostNoEvidence, m.CostReconciliationRequired))
	}
	for _, b := range s.Boundaries {
		var parts []string
		for _, d := range b.Destinations {
			parts = append(parts, fmt.Sprintf("%s %s %d", d.Destination, d.Status, d.Deliveries))
		}
		sort.Strings(parts)
		detail := "no deliveries"
		if len(parts) > 0 {
			detail = strings.Join(parts, ", ")
		}
		row("outbox "+b.Boundary, fmt.Sprintf("%d events; %s", b.Events, detail))
	}
	for _, p := range s.Pending {
		row("pending (expected)", fmt.Sprintf("%d deliveries %s → %s stay pending: the %s consumer does not exist yet",
			p.Pending, p.Boundary, p.Destination, p.Owner))
	}
}
