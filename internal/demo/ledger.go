package demo

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/server"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = db.MustLoadStatements("demo", sqlFiles, "sql")

var (
	qLedgerCounts         = statements.Get("ledger_counts")
	qFinalizationOpenWork = statements.Get("finalization_open_work")
	qReservationState     = statements.Get("reservation_state")
	qCatchUpCounts        = statements.Get("catch_up_counts")
	qWaitingReasons       = statements.Get("waiting_reasons")
	qOpenDeliveries       = statements.Get("open_deliveries")
)

// CatchUpReport is the settlement catch-up's end state: post-finality
// transitions by kind, the open late exposures (never charged under
// reconcile_before_charge) and the catch-up fences by state.
type CatchUpReport struct {
	Refunds              int64  `json:"refunds"`
	Adjustments          int64  `json:"adjustments"`
	Exposures            int64  `json:"lateSettlementExposures"`
	Refunded             string `json:"refunded"`
	Adjusted             string `json:"adjusted"`
	OpenExposures        int64  `json:"openBlockedExposures"`
	ExposureAmount       string `json:"exposureAmount"`
	Fences               int64  `json:"fences"`
	FencesCaughtUp       int64  `json:"fencesCaughtUp"`
	FencesPending        int64  `json:"fencesPendingVerification"`
	FencesBlockedOnOwner int64  `json:"fencesBlockedOnOwnerConflict"`
	// FencesWaiting are the pending fences whose newest input is not
	// settleable, by its reconciliation state: they wait visibly for the
	// owner's fix (no case covers a post-finality input Metering cannot
	// settle yet). Pending fences not
	// counted here are open work (an invariant failure once the demo
	// quiesced).
	FencesWaiting map[string]int64 `json:"fencesWaitingForReconciliation,omitempty"`
}

// summarizeCatchUp reports the catch-up and proves its invariants: each
// dimension's transitions contiguous from → to (the fence's revision is one
// plus its transitions), no step or input applied twice, one committed event
// per transition, settled (finalization ± transitions) never above reserved
// nor below zero, every exposure transition with its blocked exposure, and
// every fence caught up or visibly blocked on an owner conflict.
func summarizeCatchUp(ctx context.Context, core queryer, pools server.Pools, s *Summary) error {
	var c CatchUpReport
	var notContiguous, revisionOff, stepTwice, inputTwice, eventsOff, aboveReserved, exposureMissing int64
	if err := core.QueryRow(ctx, qCatchUpCounts).Scan(&c.Refunds, &c.Adjustments, &c.Exposures, &c.Refunded, &c.Adjusted,
		&c.OpenExposures, &c.ExposureAmount, &c.Fences, &c.FencesCaughtUp, &c.FencesPending, &c.FencesBlockedOnOwner,
		&notContiguous, &revisionOff, &stepTwice, &inputTwice, &eventsOff, &aboveReserved, &exposureMissing); err != nil {
		return fmt.Errorf("demo catch-up: %w", err)
	}
	open, waiting, err := catchUpWaits(ctx, pools)
	if err != nil {
		return fmt.Errorf("demo catch-up: %w", err)
	}
	c.FencesWaiting = waiting
	s.CatchUp = &c
	s.count("transitions_contiguous", notContiguous+revisionOff, "settlement steps (transitions and late results) without their predecessor, or fences whose revision ≠ 1 + steps")
	s.count("transition_applied_once", stepTwice+inputTwice, "dimension steps or settlement inputs applied more than once")
	s.count("transition_event_once", eventsOff, "transitions without exactly one billing.settlement-transition.committed@1")
	s.count("settled_within_reserved", aboveReserved, "reservations whose settled amount with transitions and funded late results is above reserved + funded late amounts, or below zero")
	s.count("exposure_recorded", exposureMissing, "late exposure transitions without their open, blocked exposure")
	s.count("catch_up_settled_down", int64(open), "catch-up fences still pending on a settleable input after the demo quiesced")
	return nil
}

// writeCatchUp prints the catch-up part of the summary.
func (s *Summary) writeCatchUp(row func(string, any)) {
	c := s.CatchUp
	if c == nil {
		return
	}
	row("billing: post-finality transitions", fmt.Sprintf("%d refunds (%s), %d adjustments (%s), %d late exposures",
		c.Refunds, c.Refunded, c.Adjustments, c.Adjusted, c.Exposures))
	row("billing: late exposures (blocked)", fmt.Sprintf("%d still open, %s recorded in all, never charged automatically (reconcile_before_charge)",
		c.OpenExposures, c.ExposureAmount))
	row("billing: catch-up fences", fmt.Sprintf("%d: %d caught_up, %d pending, %d blocked on an owner conflict",
		c.Fences, c.FencesCaughtUp, c.FencesPending, c.FencesBlockedOnOwner))
	if len(c.FencesWaiting) > 0 {
		waits := make([]string, 0, len(c.FencesWaiting))
		for state, n := range c.FencesWaiting {
			waits = append(waits, fmt.Sprintf("%d %s", n, state))
		}
		slices.Sort(waits)
		row("pending (expected)", fmt.Sprintf("catch-up fences waiting for the owner's fix of a post-finality input Metering cannot settle (no case covers it yet): newest input %s; nothing settled, nothing charged",
			strings.Join(waits, ", ")))
	}
}

// LedgerReport is Billing's end state: reservations, finalizations by
// decision, the evaluations that waited, the exact totals and the
// admission → finalization latency.
type LedgerReport struct {
	Reservations           int64 `json:"reservations"`
	Finalized              int64 `json:"finalized"`
	SettleAndRelease       int64 `json:"settleAndReleaseRemainder"`
	ReleaseAll             int64 `json:"releaseAll"`
	BlockedEvaluations     int64 `json:"blockedEvaluations"`
	ReconciliationDeferred int64 `json:"reconciliationDeferredEvaluations"`
	// ReconciliationRequired counts the evaluations that entered a
	// Finalization reconciliation case (one per case generation).
	ReconciliationRequired int64 `json:"reconciliationRequiredEvaluations"`
	// InCase are reservations whose fence is still in a reconciliation
	// case; WaitingReconciliation those whose fence waits as
	// reconciliation_deferred (a finalization worker without the case
	// identity primitive recorded the decision and entered no case);
	// StillOpen any other unfinished fence. All three are zero once the
	// demo closed every case.
	InCase                int64 `json:"inReconciliationCase"`
	WaitingReconciliation int64 `json:"waitingForReconciliation"`
	// WaitingReasons breaks them down by the reason code their fence shows.
	WaitingReasons     map[string]int64 `json:"waitingReasons,omitempty"`
	StillOpen          int64            `json:"stillOpen"`
	Reserved           string           `json:"reserved"`
	Settled            string           `json:"settled"`
	Released           string           `json:"released"`
	FinalizedPerSecond float64          `json:"finalizedPerSecond"`
	FinalizeP50Millis  float64          `json:"admissionToFinalizationP50Millis"`
	FinalizeP99Millis  float64          `json:"admissionToFinalizationP99Millis"`
	// UndisputedP50Millis/P99: the same without the runs whose closure
	// waited for a provider's dispute (Scenario.DisputedRuns).
	UndisputedP50Millis float64 `json:"admissionToFinalizationUndisputedP50Millis"`
	UndisputedP99Millis float64 `json:"admissionToFinalizationUndisputedP99Millis"`
}

// summarizeLedger reports the ledger and proves the invariants that can
// fail: every reservation finalized (none left in a case, waiting or
// open), one finalization per reservation (fact and event), settled +
// released = reserved, every posting group balanced, no negative balance.
func summarizeLedger(ctx context.Context, core queryer, cfg Config, s *Summary) error {
	var l LedgerReport
	var severalFacts, severalEvents, finalizedWithoutOneEvent, notAddingUp, factsNotAddingUp, unbalanced, negative int64
	disputed := []string{} // never NULL: run_id <> ALL(NULL) holds for no run
	if cfg.Scenario != nil {
		disputed = cfg.Scenario.DisputedRuns()
	}
	if err := core.QueryRow(ctx, qLedgerCounts, pgx.NamedArgs{"disputed_runs": disputed}).Scan(&l.Reservations, &l.Finalized, &l.SettleAndRelease, &l.ReleaseAll,
		&l.BlockedEvaluations, &l.ReconciliationDeferred, &l.ReconciliationRequired, &l.InCase, &l.WaitingReconciliation, &l.StillOpen,
		&l.Reserved, &l.Settled, &l.Released,
		&severalFacts, &severalEvents, &finalizedWithoutOneEvent, &notAddingUp, &factsNotAddingUp, &unbalanced, &negative,
		&l.FinalizeP50Millis, &l.FinalizeP99Millis, &l.UndisputedP50Millis, &l.UndisputedP99Millis); err != nil {
		return fmt.Errorf("demo ledger: %w", err)
	}
	var reasons string
	if err := core.QueryRow(ctx, qWaitingReasons).Scan(&reasons); err != nil {
		return fmt.Errorf("demo ledger waiting reasons: %w", err)
	}
	if err := json.Unmarshal([]byte(reasons), &l.WaitingReasons); err != nil {
		return fmt.Errorf("demo ledger waiting reasons: %w", err)
	}
	if s.DurationSeconds > 0 {
		l.FinalizedPerSecond = float64(l.Finalized) / s.DurationSeconds
	}
	s.Ledger = &l
	// Every reservation ends finalized: those whose inputs needed
	// reconciliation through their case (or, with a worker that enters no
	// case, through the owner-side fix alone); nothing is left in a case,
	// waiting, blocked or unevaluated.
	all := l.Reservations == int64(cfg.Runs+cfg.PriorRuns) && l.Finalized == l.Reservations && l.InCase+l.WaitingReconciliation+l.StillOpen == 0
	s.check("every_reservation_finalized", all, failDetail(all, fmt.Sprintf("%d admitted, %d reservations: %d finalized, %d still in a reconciliation case, %d waiting as reconciliation_deferred, %d still open",
		cfg.Runs+cfg.PriorRuns, l.Reservations, l.Finalized, l.InCase, l.WaitingReconciliation, l.StillOpen)))
	s.count("finalized_exactly_once", severalFacts+severalEvents+finalizedWithoutOneEvent,
		"reservations with other than exactly one committed fact and one billing.finalization.committed@1")
	s.count("settled_released_add_up", notAddingUp+factsNotAddingUp, "finalizations where settled + released ≠ reserved or settled > reserved")
	s.count("ledger_balanced", unbalanced, "posting groups whose debits differ from their credits")
	s.count("no_negative_balance", negative, "ledger balances below zero")
	return nil
}

// writeLedger prints the ledger part of the summary.
func (s *Summary) writeLedger(row func(string, any)) {
	l := s.Ledger
	if l == nil {
		return
	}
	row("billing: reservations finalized", fmt.Sprintf("%d of %d", l.Finalized, l.Reservations))
	row("billing: decisions", fmt.Sprintf("%d settle_and_release_remainder, %d release_all", l.SettleAndRelease, l.ReleaseAll))
	row("billing: evaluations that waited", fmt.Sprintf("%d blocked, %d reconciliation deferred, %d entered a reconciliation case",
		l.BlockedEvaluations, l.ReconciliationDeferred, l.ReconciliationRequired))
	if l.InCase+l.WaitingReconciliation+l.StillOpen > 0 {
		row("billing: not finalized", fmt.Sprintf("%d in a reconciliation case, %d waiting as reconciliation_deferred, %d still open",
			l.InCase, l.WaitingReconciliation, l.StillOpen))
	}
	if len(l.WaitingReasons) > 0 {
		reasons := make([]string, 0, len(l.WaitingReasons))
		for r, n := range l.WaitingReasons {
			reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
		}
		slices.Sort(reasons)
		row("billing: reconciliation_deferred reasons", strings.Join(reasons, ", "))
	}
	// Reserved counts every reservation; settled + released covers only the
	// finalized ones (settled_released_add_up checks each finalized
	// reservation), all of them once every case closed.
	row("billing: reserved(all)/settled/released", fmt.Sprintf("%s / %s / %s", l.Reserved, l.Settled, l.Released))
	row("finalized/s", fmt.Sprintf("%.0f", l.FinalizedPerSecond))
	row("admission→finalization p50", fmt.Sprintf("%.1f ms", l.FinalizeP50Millis))
	row("admission→finalization p99", fmt.Sprintf("%.1f ms", l.FinalizeP99Millis))
	row("  without disputed runs p50/p99", fmt.Sprintf("%.1f / %.1f ms", l.UndisputedP50Millis, l.UndisputedP99Millis))
}
