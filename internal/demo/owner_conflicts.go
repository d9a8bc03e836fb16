package demo

import (
	"context"
	"fmt"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/server"
)

// Owner conflicts the provider later fixes (issue 32): the disputed
// attempts' waits (OwnerProbe over the demo's databases, read-only) and
// the summary's "blocked on an owner conflict, later completed".

var (
	qProbeMeteringApplied      = statements.Get("probe_metering_applied")
	qProbeMeteringOwnerBlocked = statements.Get("probe_metering_owner_blocked")
	qProbeCatchUpBlocked       = statements.Get("probe_catch_up_blocked")
	qProbeRunInReconciliation  = statements.Get("probe_run_in_reconciliation")
	qOwnerConflictsMetering    = statements.Get("owner_conflicts_metering")
	qOwnerConflictsCatchUp     = statements.Get("owner_conflicts_catch_up")
)

// poolProbe is OwnerProbe on the metering and core databases.
type poolProbe struct{ metering, core queryer }

func (p poolProbe) exists(ctx context.Context, q queryer, stmt string, arg any) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, stmt, arg).Scan(&ok)
	return ok, err
}

func (p poolProbe) MeteringApplied(ctx context.Context, attemptID string) (bool, error) {
	return p.exists(ctx, p.metering, qProbeMeteringApplied, attemptID)
}

func (p poolProbe) MeteringOwnerBlocked(ctx context.Context, attemptID string) (bool, error) {
	return p.exists(ctx, p.metering, qProbeMeteringOwnerBlocked, attemptID)
}

func (p poolProbe) CatchUpOwnerBlocked(ctx context.Context, dims []string) (bool, error) {
	return p.exists(ctx, p.core, qProbeCatchUpBlocked, dims)
}

func (p poolProbe) RunInReconciliation(ctx context.Context, runID string) (bool, error) {
	return p.exists(ctx, p.core, qProbeRunInReconciliation, runID)
}

// ownerProbe is the probe of a demo whose metering worker and catch-up run
// (here or in the owner processes), nil otherwise.
func ownerProbe(pools server.Pools, cfg Config) OwnerProbe {
	m, okM := pools[boundary.Metering]
	c, okC := pools[boundary.Core]
	if !okM || !okC || !cfg.catchesUp() || (cfg.Metering == nil && !cfg.workersElsewhere()) {
		return nil
	}
	return poolProbe{metering: m, core: c}
}

// OwnerConflictReport is issue 32's end state: Metering Works and lanes
// blocked on an owner's conflict fact (the Gateway's), Metering's
// settlement input conflict facts, and the catch-up fences blocked on them,
// each with how many later completed.
type OwnerConflictReport struct {
	MeteringBlockedWorks         int64 `json:"meteringBlockedWorks"`
	MeteringBlockedWorksFinished int64 `json:"meteringBlockedWorksFinished"`
	MeteringBlockedLanes         int64 `json:"meteringBlockedLanes"`
	MeteringBlockedLanesApplied  int64 `json:"meteringBlockedLanesApplied"`
	SettlementInputConflictFacts int64 `json:"settlementInputConflictFacts"`
	CatchUpBlockedFences         int64 `json:"catchUpBlockedFences"`
	CatchUpBlockedFencesCaughtUp int64 `json:"catchUpBlockedFencesCaughtUp"`
}

// summarizeOwnerConflicts reads the report and proves: every Work and lane
// blocked on an owner conflict completed (the Work finished, the lane's
// latest Work applied), every catch-up fence blocked on one is caught_up,
// and, when the provider disputed reports, both blocked paths were reached.
func summarizeOwnerConflicts(ctx context.Context, pools server.Pools, s *Summary) error {
	m, okM := pools[boundary.Metering]
	c, okC := pools[boundary.Core]
	if !okM || !okC {
		return nil
	}
	var r OwnerConflictReport
	if err := m.QueryRow(ctx, qOwnerConflictsMetering).Scan(&r.MeteringBlockedWorks, &r.MeteringBlockedWorksFinished,
		&r.MeteringBlockedLanes, &r.MeteringBlockedLanesApplied, &r.SettlementInputConflictFacts); err != nil {
		return fmt.Errorf("demo owner conflicts (metering): %w", err)
	}
	if err := c.QueryRow(ctx, qOwnerConflictsCatchUp).Scan(&r.CatchUpBlockedFences, &r.CatchUpBlockedFencesCaughtUp); err != nil {
		return fmt.Errorf("demo owner conflicts (catch-up): %w", err)
	}
	s.OwnerConflicts = &r
	s.count("owner_blocked_metering_done", (r.MeteringBlockedWorks-r.MeteringBlockedWorksFinished)+(r.MeteringBlockedLanes-r.MeteringBlockedLanesApplied),
		"metering Works blocked on an owner conflict still unfinished, or lanes not applied since")
	s.count("owner_blocked_catch_up_done", r.CatchUpBlockedFences-r.CatchUpBlockedFencesCaughtUp,
		"catch-up fences blocked on an owner conflict not caught_up since")
	if s.Scenario != nil && s.Scenario.Disputed > 0 {
		reached := r.MeteringBlockedLanes > 0 && r.CatchUpBlockedFences > 0
		detail := ""
		if !reached {
			detail = fmt.Sprintf("%d disputed reports: %d metering lanes and %d catch-up fences blocked on an owner conflict (want at least one each)",
				s.Scenario.Disputed, r.MeteringBlockedLanes, r.CatchUpBlockedFences)
		}
		s.check("owner_blocked_paths_reached", reached, detail)
	}
	return nil
}

// writeOwnerConflicts prints the owner conflict part of the summary.
func (s *Summary) writeOwnerConflicts(row func(string, any)) {
	r := s.OwnerConflicts
	if r == nil {
		return
	}
	if s.Scenario != nil {
		row("provider: disputed reports", fmt.Sprintf("%d disputed, %d fixed by a corrected report", s.Scenario.Disputed, s.Scenario.DisputeFixes))
	}
	row("metering: blocked on owner conflict", fmt.Sprintf("%d Works (%d finished since), %d lanes (%d applied since); %d settlement input conflict facts",
		r.MeteringBlockedWorks, r.MeteringBlockedWorksFinished, r.MeteringBlockedLanes, r.MeteringBlockedLanesApplied, r.SettlementInputConflictFacts))
	row("billing: catch-up blocked on owner", fmt.Sprintf("%d fences (%d caught_up since)", r.CatchUpBlockedFences, r.CatchUpBlockedFencesCaughtUp))
}
