package demo

import (
	"context"
	"fmt"
)

var qLateCaseCounts = statements.Get("late_case_counts")

// LateCaseReport is the late settlement exposure cases' end state (issue
// 32): every exposure asked for its dimension's case generation, Operations
// opened each case from the verified case-requested events, and the
// operators funded each case's exposure through the late settlement
// command (a later transition resolves an exposure it superseded or made
// moot); Operations closed each case on Billing's verified applied facts.
type LateCaseReport struct {
	Exposures            int64  `json:"exposures"`
	ExposuresWithCase    int64  `json:"exposuresWithCase"`
	Generations          int64  `json:"caseGenerations"`
	LaterGenerations     int64  `json:"caseGenerationsAfterTheFirst"`
	OperationsCases      int64  `json:"operationsCases"`
	OperationsOpen       int64  `json:"operationsCasesOpen"`
	AmountInCases        string `json:"exposureAmountInCases"`
	Commands             int64  `json:"lateSettlementCommands"`
	Funded               string `json:"fundedAmount"`
	ResolvedByCommand    int64  `json:"exposuresResolvedByCommand"`
	ResolvedByTransition int64  `json:"exposuresResolvedByLaterTransition"`
	Unresolved           int64  `json:"exposuresUnresolved"`
	Deliveries           int64  `json:"lateDeliveries"`
	UnackedDeliveries    int64  `json:"lateDeliveriesNotAcknowledged"`
	Pairs                int64  `json:"latePairsProduced"`
	DeskRounds           int64  `json:"deskRounds"`
}

// summarizeLateCases reports the late settlement cases and proves their
// invariants: every exposure asked for a case; every Billing case
// generation is an Operations case with the same identity (and back);
// every exposure is in its Operations case and every Billing resolution is
// recorded there; one event per fact of each of the three pairs, every
// delivery acknowledged; every command result binds two distinct JTIs it
// consumed and resolves its exposure. When the desk ran, no exposure and no
// case is left open, and all three pairs were produced.
func summarizeLateCases(ctx context.Context, core queryer, desk lateDeskStats, s *Summary) error {
	var r LateCaseReport
	var withoutCase, notMatched, notInCase, resolutionsOff, eventsOff, jtisOff int64
	if err := core.QueryRow(ctx, qLateCaseCounts).Scan(&r.Exposures, &r.ExposuresWithCase, &r.Generations, &r.LaterGenerations,
		&r.OperationsCases, &r.OperationsOpen, &r.AmountInCases, &r.Commands, &r.Funded, &r.ResolvedByCommand,
		&r.ResolvedByTransition, &r.Unresolved, &withoutCase, &notMatched, &notInCase, &resolutionsOff, &eventsOff,
		&r.UnackedDeliveries, &r.Deliveries, &jtisOff, &r.Pairs); err != nil {
		return fmt.Errorf("demo late settlement cases: %w", err)
	}
	r.DeskRounds = desk.rounds
	s.LateCases = &r
	s.count("exposure_case_requested", withoutCase, "late settlement exposures that asked for no case")
	s.count("exposure_case_open", notMatched+notInCase,
		"Billing case generations and Operations cases that are not each other's, or exposures not in their Operations case")
	s.count("late_resolution_projected", resolutionsOff, "Billing's exposure resolutions and Operations' resolved exposures that are not each other's")
	s.count("late_event_once", eventsOff+r.UnackedDeliveries,
		"late settlement facts without exactly their one event (case-requested, result, applied), or deliveries of them not acknowledged")
	s.count("late_result_two_jtis", jtisOff,
		"late settlement command results without two distinct JTIs they consumed, or without their exposure resolved by the command")
	if desk.ran {
		s.count("late_cases_closed", r.Unresolved+r.OperationsOpen, "late settlement exposures unresolved or cases open after the desk")
		if r.Exposures > 0 && r.Pairs < 3 {
			s.fail("late_pairs_produced", fmt.Sprintf("%d of the three late settlement pairs produced", r.Pairs))
		}
	}
	return nil
}

// writeLateCases prints the late settlement cases part of the summary.
func (s *Summary) writeLateCases(row func(string, any)) {
	r := s.LateCases
	if r == nil {
		return
	}
	row("billing: late settlement cases", fmt.Sprintf("%d exposures asked for %d case generations (%d after a first); Operations opened %d cases holding %s",
		r.ExposuresWithCase, r.Generations, r.LaterGenerations, r.OperationsCases, r.AmountInCases))
	row("billing: late settlement commands", fmt.Sprintf("%d funded (%s charged as post-release adjustments, a second principal approving each); %d exposures resolved by a command, %d by a later transition; %d cases open",
		r.Commands, r.Funded, r.ResolvedByCommand, r.ResolvedByTransition, r.OperationsOpen))
}
