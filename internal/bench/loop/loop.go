// Package loop is the loop benchmark behind `oceanway bench --mode loop`
// (issue 35): the demo's whole scenario (admission → execution attempts →
// gateway dispatch and evidence → closure, then metering, Billing's
// finalization and the Operations projector in the same process) driven
// open loop at an offered rate, or at saturation by a fixed number of
// drivers, and measured per finalized run.
//
// One measured window runs from the driver's first start to the moment the
// loop quiesced (every reservation finalized or waiting for the
// reconciliation chain, every delivery acknowledged; the demo's own
// quiescence check). Over it the package reports:
//
//   - offered (the schedule), started, admitted and finalized runs/s, and
//     whether the driver fell behind its schedule;
//   - admission → finalization p50/p99 from billing.reservation_states
//     (created_at → finalized_at, the demo's ledger summary);
//   - CPU per finalized run: this process (getrusage) and the PostgreSQL
//     backends of the four databases (measure's sampler, as Drive uses it);
//   - commits per run (pg_stat_database.xact_commit) and rows read per run
//     (pg_stat_user_tables seq_tup_read + idx_tup_fetch; pg_stat_database
//     tup_fetched and tup_returned beside them) per database. PostgreSQL
//     flushes a backend's statistics at most once a second and an idle
//     backend's after up to 10 s, so the end counters are read once the
//     window closed plus a settle time, and the settle time's own idle
//     activity (the same length again, measured right after) is
//     subtracted.
package loop

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/demo"
)

// Database is one measured database and the boundary it serves.
type Database struct {
	Boundary string
	Name     string
}

// Measurement measures one loop run: its Drive and Quiesced are the demo's
// Config.Drive and Config.Quiesced hooks.
type Measurement struct {
	serverURL string
	databases []Database
	schedule  Schedule
	settle    time.Duration
	admin     *pgx.Conn

	start    time.Time
	before   map[string]counters
	sampler  *measure.CPUSampler
	driver   DriverReport
	quiesced time.Time
	cpu      measure.CPU
	settled  map[string]counters
	idle     map[string]counters
	idleSecs float64
	err      error
}

// NewMeasurement connects to the server's maintenance database at
// serverURL; settle is how long the statistics are left to settle after
// the window (PostgreSQL's idle flush interval is 10 s).
func NewMeasurement(ctx context.Context, serverURL string, databases []Database, s Schedule, settle time.Duration) (*Measurement, error) {
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("loop: connect: %w", err)
	}
	return &Measurement{serverURL: serverURL, databases: databases, schedule: s, settle: settle, admin: admin}, nil
}

// Close ends the measuring session.
func (m *Measurement) Close(ctx context.Context) { _ = m.admin.Close(context.WithoutCancel(ctx)) }

func (m *Measurement) names() []string {
	out := make([]string, len(m.databases))
	for i, d := range m.databases {
		out[i] = d.Name
	}
	return out
}

// Drive opens the window and drives the runs (the demo's Config.Drive).
func (m *Measurement) Drive(ctx context.Context, admit demo.AdmitFunc) error {
	before, err := readCounters(ctx, m.admin, m.serverURL, m.names())
	if err != nil {
		return err
	}
	m.before = before
	m.sampler = measure.StartCPU(ctx, m.admin, m.names())
	m.start = time.Now()
	m.driver, err = Drive(ctx, m.schedule, func(ctx context.Context, i int) error { return admit(ctx, i) })
	return err
}

// Quiesced closes the window (the demo's Config.Quiesced): it stops the
// CPU sampler, lets the statistics settle, reads them, then reads the idle
// activity of another settle time.
func (m *Measurement) Quiesced(ctx context.Context) {
	m.quiesced = time.Now()
	if m.sampler == nil {
		m.err = fmt.Errorf("loop: the window closed before it opened")
		return
	}
	m.cpu = m.sampler.Stop(ctx, 0)
	if sleep(ctx, m.settle) != nil {
		m.err = ctx.Err()
		return
	}
	settled, err := readCounters(ctx, m.admin, m.serverURL, m.names())
	if err != nil {
		m.err = err
		return
	}
	t := time.Now()
	if sleep(ctx, m.settle) != nil {
		m.err = ctx.Err()
		return
	}
	later, err := readCounters(ctx, m.admin, m.serverURL, m.names())
	if err != nil {
		m.err = err
		return
	}
	m.idleSecs = time.Since(t).Seconds()
	m.settled, m.idle = settled, map[string]counters{}
	for name, c := range later {
		m.idle[name] = c.minus(settled[name])
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return sleepUntil(ctx, time.Now().Add(d))
}

// Case is one measured loop run.
type Case struct {
	Runs    int     `json:"runs"`
	Rate    float64 `json:"offeredRate"` // runs/s; 0: saturation
	Drivers int     `json:"drivers"`
	// OfferedPerSecond is the schedule's rate (0 at saturation);
	// AdmittedPerSecond is runs / (first start → last run's scenario
	// returned, closure included); FinalizedPerSecond is finalized /
	// (first start → the loop quiesced).
	OfferedPerSecond   float64 `json:"offeredPerSecond"`
	AdmittedPerSecond  float64 `json:"admittedPerSecond"`
	FinalizedPerSecond float64 `json:"finalizedPerSecond"`
	WindowSeconds      float64 `json:"windowSeconds"`
	// Admitted is the reservations admitted; Finalized those settled or
	// released; WaitingReconciliation those whose fence waits for the
	// reconciliation chain (never counted as finalized); StillOpen any
	// other (an invariant failure).
	Admitted              int64 `json:"admitted"`
	Finalized             int64 `json:"finalized"`
	WaitingReconciliation int64 `json:"waitingForReconciliation"`
	StillOpen             int64 `json:"stillOpen"`
	// FinalizeP50Millis/P99: billing.reservation_states created_at →
	// finalized_at of the finalized reservations.
	FinalizeP50Millis float64 `json:"admissionToFinalizationP50Millis"`
	FinalizeP99Millis float64 `json:"admissionToFinalizationP99Millis"`
	// UndisputedP50Millis/P99: the same without the runs whose closure
	// waited for a provider's dispute (about 2 % of runs, the demo's
	// disputed scenario): their time is the dispute's protocol.
	UndisputedP50Millis float64      `json:"admissionToFinalizationUndisputedP50Millis"`
	UndisputedP99Millis float64      `json:"admissionToFinalizationUndisputedP99Millis"`
	Driver              DriverReport `json:"driver"`
	// CPU per finalized run, in milliseconds: this process, and the
	// PostgreSQL backends of the four databases (with their split).
	ProcessMillisPerRun     float64            `json:"processCpuMillisPerRun"`
	BackendMillisPerRun     float64            `json:"postgresCpuMillisPerRun"`
	BackendMillisByDatabase map[string]float64 `json:"postgresCpuMillisPerRunByDatabase,omitempty"`
	CPU                     measure.CPU        `json:"cpu"`
	// Databases are the commits and rows read per run of each database;
	// CommitsPerRun and RowsReadPerRun their sums.
	Databases      []DatabaseFigures `json:"databases"`
	CommitsPerRun  float64           `json:"commitsPerRun"`
	RowsReadPerRun float64           `json:"rowsReadPerRun"`
	StatsSource    string            `json:"statsSource"`
	// Invariants are the demo's, checked at the end of the run.
	Invariants []demo.Check `json:"invariants"`
	Passed     bool         `json:"passed"`
	Notes      []string     `json:"notes,omitempty"`
}

// DatabaseFigures are one database's statistics over the window, per
// admitted run (the idle activity of the settle time subtracted).
type DatabaseFigures struct {
	Boundary       string  `json:"boundary"`
	Database       string  `json:"database"`
	Commits        int64   `json:"commits"`
	CommitsPerRun  float64 `json:"commitsPerRun"`
	Rollbacks      int64   `json:"rollbacks"`
	RowsRead       int64   `json:"rowsRead"`
	RowsReadPerRun float64 `json:"rowsReadPerRun"`
	// SeqTupRead and IdxTupFetch make up RowsRead.
	SeqTupRead  int64 `json:"seqTupRead"`
	IdxTupFetch int64 `json:"idxTupFetch"`
	// TupFetchedPerRun and TupReturnedPerRun are pg_stat_database's
	// counters (catalog reads included; tup_returned counts every row a
	// scan visited).
	TupFetchedPerRun  float64 `json:"tupFetchedPerRun"`
	TupReturnedPerRun float64 `json:"tupReturnedPerRun"`
	// IdleCommitsPerSecond is the commit rate with nothing to do (polls).
	IdleCommitsPerSecond float64 `json:"idleCommitsPerSecond"`
}

// statsSource says how the statistics were taken.
const statsSource = "pg_stat_database xact_commit/xact_rollback/tup_fetched/tup_returned and pg_stat_user_tables seq_tup_read+idx_tup_fetch (rows read), " +
	"before the first run minus after the loop quiesced plus a settle time, less the idle activity of one more settle time"

// Case assembles the figures of the run whose demo summary is s.
func (m *Measurement) Case(s *demo.Summary) (Case, error) {
	if m.err != nil {
		return Case{}, m.err
	}
	if s == nil || s.Ledger == nil {
		return Case{}, fmt.Errorf("loop: the demo summary has no ledger (no finalization worker)")
	}
	if m.settled == nil {
		return Case{}, fmt.Errorf("loop: the loop never quiesced")
	}
	l := s.Ledger
	c := Case{Runs: m.schedule.Runs, Rate: max(m.schedule.Rate, 0), Drivers: m.schedule.Drivers, OfferedPerSecond: max(m.schedule.Rate, 0),
		Admitted: l.Reservations, Finalized: l.Finalized, WaitingReconciliation: l.WaitingReconciliation, StillOpen: l.StillOpen,
		FinalizeP50Millis: round3(l.FinalizeP50Millis), FinalizeP99Millis: round3(l.FinalizeP99Millis), Driver: m.driver,
		UndisputedP50Millis: round3(l.UndisputedP50Millis), UndisputedP99Millis: round3(l.UndisputedP99Millis),
		CPU: m.cpu, StatsSource: statsSource, Invariants: s.Invariants, Passed: s.Passed, Notes: s.Notes}
	window := m.quiesced.Sub(m.start).Seconds()
	c.WindowSeconds = round3(window)
	if m.driver.Seconds > 0 {
		c.AdmittedPerSecond = round3(float64(m.schedule.Runs) / m.driver.Seconds)
	}
	if window > 0 {
		c.FinalizedPerSecond = round3(float64(l.Finalized) / window)
	}
	if l.Finalized > 0 {
		per := func(seconds float64) float64 { return round3(seconds * 1000 / float64(l.Finalized)) }
		c.ProcessMillisPerRun, c.BackendMillisPerRun = per(m.cpu.ProcessSeconds), per(m.cpu.BackendSeconds)
		if len(m.cpu.BackendByDatabase) > 0 {
			c.BackendMillisByDatabase = map[string]float64{}
			for name, sec := range m.cpu.BackendByDatabase {
				c.BackendMillisByDatabase[name] = per(sec)
			}
		}
	}
	runs := float64(m.schedule.Runs)
	var commits, read int64
	for _, d := range m.databases {
		idle := m.idle[d.Name]
		w := m.settled[d.Name].minus(m.before[d.Name]).minus(idle)
		f := DatabaseFigures{Boundary: d.Boundary, Database: d.Name, Commits: w.Commits, Rollbacks: w.Rollbacks,
			RowsRead: w.rowsRead(), SeqTupRead: w.SeqTupRead, IdxTupFetch: w.IdxTupFetch,
			CommitsPerRun: round3(float64(w.Commits) / runs), RowsReadPerRun: round3(float64(w.rowsRead()) / runs),
			TupFetchedPerRun: round3(float64(w.TupFetched) / runs), TupReturnedPerRun: round3(float64(w.TupReturned) / runs)}
		if m.idleSecs > 0 {
			f.IdleCommitsPerSecond = round3(float64(idle.Commits) / m.idleSecs)
		}
		commits += w.Commits
		read += w.rowsRead()
		c.Databases = append(c.Databases, f)
	}
	c.CommitsPerRun, c.RowsReadPerRun = round3(float64(commits)/runs), round3(float64(read)/runs)
	if m.driver.Behind {
		c.Notes = append(c.Notes, fmt.Sprintf("the driver fell behind its schedule: %d run(s) started more than %s late (max %.0f ms)",
			m.driver.LateStarts, behindAfter, m.driver.Lag.Max))
	}
	return c, nil
}

// Report is the JSON document of `oceanway bench --mode loop --json`.
type Report struct {
	Tool     string         `json:"tool"`
	Started  time.Time      `json:"started"`
	Server   measure.Server `json:"server"`
	Settings string         `json:"settings"`
	Cases    []Case         `json:"cases"`
	// Flatness compares the cost per run at the smallest and the largest
	// run count of each offered rate.
	Flatness  []Flatness `json:"flatness,omitempty"`
	Databases []string   `json:"keptDatabases,omitempty"`
}

// Flatness is the cost per run at a larger run count over a smaller one;
// Flat when every ratio is at most 1.3.
type Flatness struct {
	Rate          float64 `json:"offeredRate"`
	FromRuns      int     `json:"fromRuns"`
	ToRuns        int     `json:"toRuns"`
	ProcessCPU    float64 `json:"processCpuRatio"`
	PostgresCPU   float64 `json:"postgresCpuRatio"`
	Commits       float64 `json:"commitsRatio"`
	RowsRead      float64 `json:"rowsReadRatio"`
	Flat          bool    `json:"flat"`
	FlatThreshold float64 `json:"flatThreshold"`
}

// flatWithin is the largest ratio that still counts as flat.
const flatWithin = 1.3

// Compare fills r.Flatness: for each offered rate with at least two run
// counts, the largest against the smallest.
func (r *Report) Compare() {
	byRate := map[float64][]Case{}
	var rates []float64
	for _, c := range r.Cases {
		if _, ok := byRate[c.Rate]; !ok {
			rates = append(rates, c.Rate)
		}
		byRate[c.Rate] = append(byRate[c.Rate], c)
	}
	sort.Float64s(rates)
	r.Flatness = nil
	for _, rate := range rates {
		cs := byRate[rate]
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Runs < cs[j].Runs })
		lo, hi := cs[0], cs[len(cs)-1]
		if lo.Runs == hi.Runs {
			continue
		}
		f := Flatness{Rate: rate, FromRuns: lo.Runs, ToRuns: hi.Runs, FlatThreshold: flatWithin,
			ProcessCPU: ratio(hi.ProcessMillisPerRun, lo.ProcessMillisPerRun), PostgresCPU: ratio(hi.BackendMillisPerRun, lo.BackendMillisPerRun),
			Commits: ratio(hi.CommitsPerRun, lo.CommitsPerRun), RowsRead: ratio(hi.RowsReadPerRun, lo.RowsReadPerRun)}
		f.Flat = f.ProcessCPU <= flatWithin && f.PostgresCPU <= flatWithin && f.Commits <= flatWithin && f.RowsRead <= flatWithin
		r.Flatness = append(r.Flatness, f)
	}
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return round3(a / b)
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
