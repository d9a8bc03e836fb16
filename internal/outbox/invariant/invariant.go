// Package invariant is the one place that proves, by SQL over a producer
// database, what the outbox guarantees: every delivery acknowledged at most
// once and only with a matching finish, at most one finish per attempt
// start, published_at set exactly for fully acknowledged events, and, once
// the outbox is drained, nothing lost, pending, unfinished or quarantined.
//
// The demo summary, the bench's end-state check and the tests (through
// outboxtest) all read the same Report, so a new guarantee is added once,
// here, and every caller checks it.
package invariant

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oceanway/core/internal/outbox/invariant/dbsqlc"
)

// Scope says when a check must hold.
type Scope int

const (
	// Quiescent checks hold whenever no outbox transaction is in flight,
	// whatever the deliveries' statuses (pending, leased, quarantined).
	Quiescent Scope = iota
	// Drained checks hold once every delivery has been delivered: every
	// delivery acknowledged, every attempt finished, nothing quarantined.
	Drained
)

// Check is one invariant: a named count of violations that must be zero.
type Check struct {
	Name  string
	Scope Scope
	// Violations is the number of rows breaking the invariant.
	Violations int64
	// What describes one violating row, for the detail line.
	What string
}

// OK reports whether the invariant holds.
func (c Check) OK() bool { return c.Violations == 0 }

// Detail is "" for a holding invariant, else "<n> <what>".
func (c Check) Detail() string {
	if c.OK() {
		return ""
	}
	return fmt.Sprintf("%d %s", c.Violations, c.What)
}

// Report is every outbox invariant, evaluated in one statement (one
// snapshot), with the totals that put the counts in context.
type Report struct {
	Events     int64
	Deliveries int64
	// RetriedDeliveries needed more than one attempt (context, not a check).
	RetriedDeliveries int64
	// Checks in a stable order (the demo prints them in this order).
	Checks []Check
}

// Evaluate reads the report from a producer database (pool, connection or
// transaction).
func Evaluate(ctx context.Context, db dbsqlc.DBTX) (Report, error) {
	r, err := dbsqlc.New().InvariantCounts(ctx, db)
	if err != nil {
		return Report{}, fmt.Errorf("outbox invariants: %w", err)
	}
	return Report{
		Events: r.Events, Deliveries: r.Deliveries, RetriedDeliveries: r.RetriedDeliveries,
		Checks: []Check{
			{"no_lost_delivery", Drained, r.UnacknowledgedDeliveries, "deliveries not acknowledged"},
			{"every_event_has_its_deliveries", Quiescent, r.EventsWithoutDeliveries, "events without delivery rows"},
			{"no_double_ack", Quiescent, r.DeliveriesAcknowledgedTwice, "deliveries with more than one acknowledged finish"},
			{"ack_matches_finish", Quiescent, r.AcksWithoutFinish, "acknowledged deliveries whose current attempt has no acknowledged finish"},
			{"at_most_one_finish_per_start", Quiescent, r.StartsFinishedTwice, "attempt starts with two finishes"},
			{"every_start_finished", Drained, r.UnfinishedStarts, "attempt starts without a finish"},
			{"published_at_exact", Quiescent, r.EventsPublishedWrongly, "events whose published_at disagrees with their mandatory deliveries"},
			{"ack_iff_one_acked_finish", Quiescent, r.DeliveriesStatusDisagreesWithFinishes,
				"deliveries whose status disagrees with their acknowledged finishes (acknowledged exactly when one exists)"},
			{"every_event_published", Drained, r.UnpublishedEvents, "events without published_at"},
			{"no_quarantine", Drained, r.QuarantineRecords, "quarantine records"},
		},
	}, nil
}

// In returns the checks that must hold in scope: Quiescent ones always,
// Drained ones only when scope is Drained.
func (r Report) In(scope Scope) []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Scope <= scope {
			out = append(out, c)
		}
	}
	return out
}

// ErrViolated is a report with a broken invariant in the asked scope.
var ErrViolated = errors.New("outbox invariants violated")

// Err is nil when every check in scope holds, else ErrViolated naming each
// broken check with its detail.
func (r Report) Err(scope Scope) error {
	var broken []string
	for _, c := range r.In(scope) {
		if !c.OK() {
			broken = append(broken, c.Name+": "+c.Detail())
		}
	}
	if len(broken) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%d events, %d deliveries): %s", ErrViolated, r.Events, r.Deliveries, strings.Join(broken, "; "))
}
