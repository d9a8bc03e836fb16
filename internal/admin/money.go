package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The boundaries that own the money sections of the overview: Billing's
// tables live in the core database (schema billing), Metering's Work queue
// in the metering database (schema metering).
const (
	BillingBoundary  = "core"
	MeteringBoundary = "metering"
)

// DefaultMoneyListLimit bounds each list of the money sections (open
// exposures, blocked Work).
const DefaultMoneyListLimit = 20

// CasesOnTheirPage is what the overview says about open cases: they and
// their command chain are listed on the Cases page (cases.go).
const CasesOnTheirPage = "Finalization reconciliation cases and their command chain are listed on the Cases page, read-only; a case closes only through oceanway case request|approve|apply."

var (
	qMoneyBillingPresent      = stmts.Get("money_billing_present")
	qMoneyBillingTotals       = stmts.Get("money_billing_totals")
	qMoneyBillingAccounts     = stmts.Get("money_billing_accounts")
	qMoneyBillingWaiting      = stmts.Get("money_billing_waiting")
	qMoneyBillingExposures    = stmts.Get("money_billing_exposures")
	qMoneyBillingExposureList = stmts.Get("money_billing_exposure_list")
	qMoneyMeteringPresent     = stmts.Get("money_metering_present")
	qMoneyMeteringLanes       = stmts.Get("money_metering_blocked_lanes")
	qMoneyMeteringBlockedList = stmts.Get("money_metering_blocked_list")
)

// SectionStatus says where a money section was read from and whether it
// could be: a boundary with no pool is not configured (not an error), a
// database without the owner's tables is not installed, a failed read
// carries its error.
type SectionStatus struct {
	Boundary   string    `json:"boundary"`
	Configured bool      `json:"configured"`
	Installed  bool      `json:"installed"`
	Database   string    `json:"database,omitempty"`
	AsOf       time.Time `json:"asOf"`
	Error      string    `json:"error,omitempty"`
}

// Readable reports whether the section's numbers were read.
func (s SectionStatus) Readable() bool { return s.Configured && s.Installed && s.Error == "" }

// Money is the money of the overview: Billing's reservations, ledger,
// exposures and cases (core database) and Metering's blocked Work
// (metering database), each read in its own database's snapshot.
type Money struct {
	Billing     BillingOverview     `json:"billing"`
	BlockedWork BlockedWorkOverview `json:"blockedWork"`
}

// BillingOverview is what the core database's billing line holds, read in
// one snapshot.
type BillingOverview struct {
	SectionStatus
	Reservations ReservationCounts `json:"reservations"`
	// Waiting are the unfinished finalization fences by state and reason.
	Waiting   []WaitingGroup `json:"waiting"`
	Ledger    LedgerTotals   `json:"ledger"`
	Exposures ExposureList   `json:"exposures"`
	Cases     OpenCases      `json:"cases"`
}

// ReservationCounts are the reservations by state: finalized (settled or
// released) and still reserved.
type ReservationCounts struct {
	Total         int64 `json:"total"`
	Settled       int64 `json:"settled"`
	Released      int64 `json:"released"`
	StillReserved int64 `json:"stillReserved"`
}

// Finalized is the number of reservations settled or released.
func (c ReservationCounts) Finalized() int64 { return c.Settled + c.Released }

// WaitingGroup is one (coordination state, waiting reason) of the
// unfinished finalization fences, with its oldest: the reservation in the
// group longest, since its fence's last change.
type WaitingGroup struct {
	CoordinationState   string    `json:"coordinationState"`
	WaitingReason       string    `json:"waitingReason"`
	Count               int64     `json:"count"`
	OldestReservationID string    `json:"oldestReservationId"`
	OldestSince         time.Time `json:"oldestSince"`
	OldestAgeSeconds    float64   `json:"oldestAgeSeconds"`
}

// LedgerTotals are the amounts that must add up, in credits (exact decimal
// text). Every boolean is computed by the SQL over the snapshot.
type LedgerTotals struct {
	// Reserved is the sum of every reservation's reserved amount; Settled
	// and Released the amounts their finalizations settled and released;
	// Held the reserved amount of the reservations still reserved.
	Reserved string `json:"reserved"`
	Settled  string `json:"settled"`
	Released string `json:"released"`
	Held     string `json:"held"`
	// AddsUp: Reserved = Settled + Released + Held.
	AddsUp bool `json:"addsUp"`
	// Debit and Credit are the sums of every ledger posting line by
	// direction.
	Debit            string `json:"debit"`
	Credit           string `json:"credit"`
	Lines            int64  `json:"lines"`
	PostingGroups    int64  `json:"postingGroups"`
	UnbalancedGroups int64  `json:"unbalancedGroups"`
	// Balanced: Debit = Credit and every posting group balances.
	Balanced bool `json:"balanced"`
	// HoldBalance is the ledger's reservation_hold balance; HoldMatchesHeld
	// says it equals Held.
	HoldBalance     string `json:"holdBalance"`
	HoldMatchesHeld bool   `json:"holdMatchesHeld"`
	// Accounts are the balances per account kind (billing.ledger_balances).
	Accounts []AccountBalance `json:"accounts"`
}

// AccountBalance is the ledger balance of one account kind over every
// reservation.
type AccountBalance struct {
	AccountKind string `json:"accountKind" db:"account_kind"`
	Balance     string `json:"balance" db:"balance"`
}

// ExposureList is the open late settlement exposures: their count, amount
// and oldest, and a bounded list, oldest first.
type ExposureList struct {
	Open             int64      `json:"open"`
	Amount           string     `json:"amount"`
	OldestRecordedAt *time.Time `json:"oldestRecordedAt"`
	OldestAgeSeconds float64    `json:"oldestAgeSeconds"`
	Limit            int        `json:"limit"`
	Truncated        bool       `json:"truncated"`
	Items            []Exposure `json:"items"`
}

// More is the number of open exposures the list does not show.
func (l ExposureList) More() int64 { return max(0, l.Open-int64(len(l.Items))) }

// Exposure is one open late settlement exposure.
type Exposure struct {
	ExposureID         string    `json:"exposureId"`
	ExposureRef        string    `json:"exposureRef"`
	ReservationID      string    `json:"reservationId"`
	RunID              string    `json:"runId,omitempty"`
	ChargeDimensionKey string    `json:"chargeDimensionKey,omitempty"`
	Amount             string    `json:"amount"`
	AutomaticCharge    string    `json:"automaticCharge"`
	RecordedAt         time.Time `json:"recordedAt"`
	AgeSeconds         float64   `json:"ageSeconds"`
}

// OpenCases is the open-cases section of the overview: the cases are on
// the Cases page (Reader.Cases); the section points there and counts the
// reservations whose evaluation deferred reconciliation without a case.
type OpenCases struct {
	// ChainBuilt is true: the case chain exists (issue 31) and the Cases
	// page lists it.
	ChainBuilt bool   `json:"chainBuilt"`
	Note       string `json:"note"`
	// WaitingForReconciliation are the fences awaiting_finalization with a
	// reconciliation_deferred:<code> reason.
	WaitingForReconciliation int64 `json:"waitingForReconciliation"`
}

// BlockedWorkOverview is the active Metering Work with a recorded Blocked
// fact, by lane, and a bounded list, oldest queued first.
type BlockedWorkOverview struct {
	SectionStatus
	Total     int64         `json:"total"`
	Lanes     []BlockedLane `json:"lanes"`
	Limit     int           `json:"limit"`
	Truncated bool          `json:"truncated"`
	Items     []BlockedWork `json:"items"`
}

// More is the number of blocked Work the list does not show.
func (b BlockedWorkOverview) More() int64 { return max(0, b.Total-int64(len(b.Items))) }

// BlockedLane is the blocked active Work of one lane.
type BlockedLane struct {
	Lane             string    `json:"lane" db:"lane"`
	Blocked          int64     `json:"blocked" db:"blocked"`
	OldestQueuedAt   time.Time `json:"oldestQueuedAt" db:"oldest_queued_at"`
	OldestAgeSeconds float64   `json:"oldestAgeSeconds" db:"-"`
}

// BlockedWork is one blocked active Work with its latest Blocked fact.
type BlockedWork struct {
	WorkRef            string    `json:"workRef"`
	Lane               string    `json:"lane"`
	QueuedAt           time.Time `json:"queuedAt"`
	AgeSeconds         float64   `json:"ageSeconds"`
	Attempt            int64     `json:"attempt"`
	BlockedAt          time.Time `json:"blockedAt"`
	Cause              string    `json:"cause,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	Stage              string    `json:"stage,omitempty"`
	RunID              string    `json:"runId,omitempty"`
	ExecutionAttemptID string    `json:"executionAttemptId,omitempty"`
}

// Money reads the money sections: Billing from the core database and the
// blocked Work from the metering database, each in its own read-only
// snapshot. A boundary without a pool is reported not configured.
func (r *Reader) Money(ctx context.Context) Money {
	return Money{Billing: r.billingOverview(ctx), BlockedWork: r.blockedWork(ctx)}
}

// ownerSection runs read in a read-only snapshot of boundary's database and
// fills its status; present answers whether the owner's tables exist. The
// money sections and the Cases page are read this way.
func (r *Reader) ownerSection(ctx context.Context, boundary string, present func(ctx context.Context, tx pgx.Tx) (bool, error), read func(ctx context.Context, tx pgx.Tx, asOf time.Time) error) SectionStatus {
	st := SectionStatus{Boundary: boundary}
	pool := r.boundaries[boundary]
	if pool == nil {
		return st
	}
	st.Configured = true
	err := r.readOnly(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		snap, err := queries.Snapshot(ctx, tx)
		if err != nil {
			return fmt.Errorf("read snapshot time: %w", err)
		}
		st.AsOf, st.Database = snap.AsOf.UTC(), snap.Database
		if st.Installed, err = present(ctx, tx); err != nil || !st.Installed {
			return err
		}
		return read(ctx, tx, st.AsOf)
	})
	if err != nil {
		st.Error = err.Error()
	}
	return st
}

// loadedPresent is the presence check of a loaded statement that answers
// one boolean.
func loadedPresent(stmt string) func(ctx context.Context, tx pgx.Tx) (bool, error) {
	return func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var present bool
		err := tx.QueryRow(ctx, stmt).Scan(&present)
		return present, err
	}
}

// ageAt is the age of t at the snapshot time asOf (never negative).
func ageAt(asOf, t time.Time) float64 { return max(0, asOf.Sub(t).Seconds()) }

func (r *Reader) billingOverview(ctx context.Context) BillingOverview {
	var out BillingOverview
	out.SectionStatus = r.ownerSection(ctx, BillingBoundary, loadedPresent(qMoneyBillingPresent), func(ctx context.Context, tx pgx.Tx, asOf time.Time) error {
		b, err := readBilling(ctx, tx, asOf, r.cfg.MoneyListLimit)
		if err != nil {
			return err
		}
		out = b
		return nil
	})
	out.Cases.ChainBuilt, out.Cases.Note = true, CasesOnTheirPage
	if out.Waiting == nil {
		out.Waiting = []WaitingGroup{}
	}
	if out.Ledger.Accounts == nil {
		out.Ledger.Accounts = []AccountBalance{}
	}
	if out.Exposures.Items == nil {
		out.Exposures.Items = []Exposure{}
	}
	out.Exposures.Limit = r.cfg.MoneyListLimit
	return out
}

func readBilling(ctx context.Context, tx pgx.Tx, asOf time.Time, limit int) (BillingOverview, error) {
	var b BillingOverview
	c, l := &b.Reservations, &b.Ledger
	if err := tx.QueryRow(ctx, qMoneyBillingTotals).Scan(&c.Total, &c.Settled, &c.Released, &c.StillReserved,
		&l.Reserved, &l.Settled, &l.Released, &l.Held, &l.AddsUp,
		&l.Debit, &l.Credit, &l.Lines, &l.PostingGroups, &l.UnbalancedGroups, &l.Balanced,
		&l.HoldBalance, &l.HoldMatchesHeld, &b.Cases.WaitingForReconciliation); err != nil {
		return b, fmt.Errorf("read billing totals: %w", err)
	}
	rows, err := tx.Query(ctx, qMoneyBillingAccounts)
	if err != nil {
		return b, fmt.Errorf("read ledger balances: %w", err)
	}
	if l.Accounts, err = pgx.CollectRows(rows, pgx.RowToStructByName[AccountBalance]); err != nil {
		return b, fmt.Errorf("read ledger balances: %w", err)
	}

	rows, err = tx.Query(ctx, qMoneyBillingWaiting)
	if err != nil {
		return b, fmt.Errorf("read waiting fences: %w", err)
	}
	b.Waiting, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (WaitingGroup, error) {
		var g WaitingGroup
		err := row.Scan(&g.CoordinationState, &g.WaitingReason, &g.Count, &g.OldestReservationID, &g.OldestSince)
		g.OldestSince = g.OldestSince.UTC()
		g.OldestAgeSeconds = ageAt(asOf, g.OldestSince)
		return g, err
	})
	if err != nil {
		return b, fmt.Errorf("read waiting fences: %w", err)
	}

	e := &b.Exposures
	if err := tx.QueryRow(ctx, qMoneyBillingExposures).Scan(&e.Open, &e.Amount, &e.OldestRecordedAt); err != nil {
		return b, fmt.Errorf("read open exposures: %w", err)
	}
	if e.OldestRecordedAt = utc(e.OldestRecordedAt); e.OldestRecordedAt != nil {
		e.OldestAgeSeconds = ageAt(asOf, *e.OldestRecordedAt)
	}
	rows, err = tx.Query(ctx, qMoneyBillingExposureList, pgx.NamedArgs{"row_limit": limit + 1})
	if err != nil {
		return b, fmt.Errorf("list open exposures: %w", err)
	}
	e.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Exposure, error) {
		var x Exposure
		var runID, dim *string
		err := row.Scan(&x.ExposureID, &x.ExposureRef, &x.ReservationID, &x.Amount, &x.AutomaticCharge, &x.RecordedAt, &runID, &dim)
		x.RunID, x.ChargeDimensionKey = deref(runID), deref(dim)
		x.RecordedAt = x.RecordedAt.UTC()
		x.AgeSeconds = ageAt(asOf, x.RecordedAt)
		return x, err
	})
	if err != nil {
		return b, fmt.Errorf("list open exposures: %w", err)
	}
	if len(e.Items) > limit {
		e.Items, e.Truncated = e.Items[:limit], true
	}
	return b, nil
}

func (r *Reader) blockedWork(ctx context.Context) BlockedWorkOverview {
	var out BlockedWorkOverview
	out.SectionStatus = r.ownerSection(ctx, MeteringBoundary, loadedPresent(qMoneyMeteringPresent), func(ctx context.Context, tx pgx.Tx, asOf time.Time) error {
		w, err := readBlockedWork(ctx, tx, asOf, r.cfg.MoneyListLimit)
		if err != nil {
			return err
		}
		out = w
		return nil
	})
	if out.Lanes == nil {
		out.Lanes = []BlockedLane{}
	}
	if out.Items == nil {
		out.Items = []BlockedWork{}
	}
	out.Limit = r.cfg.MoneyListLimit
	return out
}

func readBlockedWork(ctx context.Context, tx pgx.Tx, asOf time.Time, limit int) (BlockedWorkOverview, error) {
	var w BlockedWorkOverview
	rows, err := tx.Query(ctx, qMoneyMeteringLanes)
	if err != nil {
		return w, fmt.Errorf("count blocked work: %w", err)
	}
	if w.Lanes, err = pgx.CollectRows(rows, pgx.RowToStructByName[BlockedLane]); err != nil {
		return w, fmt.Errorf("count blocked work: %w", err)
	}
	for i := range w.Lanes {
		w.Lanes[i].OldestQueuedAt = w.Lanes[i].OldestQueuedAt.UTC()
		w.Lanes[i].OldestAgeSeconds = ageAt(asOf, w.Lanes[i].OldestQueuedAt)
		w.Total += w.Lanes[i].Blocked
	}
	rows, err = tx.Query(ctx, qMoneyMeteringBlockedList, pgx.NamedArgs{"row_limit": limit + 1})
	if err != nil {
		return w, fmt.Errorf("list blocked work: %w", err)
	}
	w.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (BlockedWork, error) {
		var x BlockedWork
		var cause, reason, stage, runID, attemptID *string
		err := row.Scan(&x.WorkRef, &x.Lane, &x.QueuedAt, &x.Attempt, &x.BlockedAt, &cause, &reason, &stage, &runID, &attemptID)
		x.Cause, x.Reason, x.Stage, x.RunID, x.ExecutionAttemptID = deref(cause), deref(reason), deref(stage), deref(runID), deref(attemptID)
		x.QueuedAt, x.BlockedAt = x.QueuedAt.UTC(), x.BlockedAt.UTC()
		x.AgeSeconds = ageAt(asOf, x.QueuedAt)
		return x, err
	})
	if err != nil {
		return w, fmt.Errorf("list blocked work: %w", err)
	}
	if len(w.Items) > limit {
		w.Items, w.Truncated = w.Items[:limit], true
	}
	return w, nil
}
