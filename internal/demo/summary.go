package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/oceanway/core/internal/demo/dbsqlc"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/invariant"
)

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Check is one invariant verdict.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Summary is the result of a demo run.
type Summary struct {
	Runs                  int     `json:"runs"`
	Events                int64   `json:"events"`
	Deliveries            int64   `json:"deliveries"`
	Acknowledged          int64   `json:"acknowledged"`
	Open                  int64   `json:"open"`
	Quarantined           int64   `json:"quarantined"`
	AdmitSeconds          float64 `json:"admitSeconds"`
	DurationSeconds       float64 `json:"durationSeconds"`
	AdmissionsPerSecond   float64 `json:"admissionsPerSecond"`
	AcknowledgedPerSecond float64 `json:"acknowledgedPerSecond"`
	LatencyP50Millis      float64 `json:"latencyP50Millis"`
	LatencyP99Millis      float64 `json:"latencyP99Millis"`
	Attempts              int64   `json:"attempts"`
	Retries               int64   `json:"retries"`
	LeaseExpiries         int64   `json:"leaseExpiries"`
	LeaseLost             int64   `json:"leaseLost"`
	// ConsumerCalls is how many consumer calls the dispatchers made;
	// DeliveriesPerCall how many deliveries one carried on average
	// (batching consumers take a chunk per call).
	ConsumerCalls     uint64  `json:"consumerCalls"`
	DeliveriesPerCall float64 `json:"deliveriesPerCall"`
	Transport         string  `json:"transport"`
	// Driver is how the scenario called the owners: DriverInProcess (their
	// Go services) or DriverAPI (the platform API over HTTP).
	Driver           string `json:"driver"`
	DroppedResponses int64  `json:"droppedResponses,omitempty"`
	// OwnerReadsOver is how the workers reached the other owners' reads
	// (inprocess | http); over HTTP, how many calls they made, how many got
	// no answer (retried) and how many answers chaos dropped.
	OwnerReadsOver       string `json:"ownerReadsOver"`
	OwnerReadCalls       int64  `json:"ownerReadCalls,omitempty"`
	OwnerReadsUnanswered int64  `json:"ownerReadsUnanswered,omitempty"`
	OwnerAnswersDropped  int64  `json:"ownerAnswersDropped,omitempty"`
	// Processes is the owner processes' report (--processes only).
	Processes              *ProcessReport `json:"processes,omitempty"`
	Chaos                  bool           `json:"chaos"`
	Kills                  int64          `json:"kills"`
	Pauses                 int64          `json:"pauses"`
	InjectedFailures       int64          `json:"injectedFailures"`
	DatabaseRestarts       int64          `json:"databaseRestarts"`
	AdmissionRetries       int64          `json:"admissionRetries"`
	VerificationState      string         `json:"verificationState"`
	SnapshotCurrency       string         `json:"snapshotCurrency"`
	ProjectionCompleteness string         `json:"projectionCompleteness"`
	CompletenessReason     string         `json:"completenessReason,omitempty"`
	// Scenario, Execution, Gateway, Boundaries and Pending: the owners'
	// end state and every boundary's outbox (Pending names the deliveries
	// that wait for consumers that do not exist yet).
	Scenario   *Mix             `json:"scenario,omitempty"`
	Execution  *ExecutionReport `json:"execution,omitempty"`
	Gateway    *GatewayReport   `json:"gateway,omitempty"`
	Metering   *MeteringReport  `json:"metering,omitempty"`
	Boundaries []BoundaryReport `json:"boundaries,omitempty"`
	Pending    []PendingNote    `json:"pendingWithoutConsumer,omitempty"`
	// Ledger is Billing's end state (the finalization loop).
	Ledger *LedgerReport `json:"ledger,omitempty"`
	// Cases are the Finalization reconciliation cases the demo closed.
	Cases *CaseReport `json:"cases,omitempty"`
	// Cost is the loop's cost per finalized run (filled in by the caller
	// that measured the window).
	Cost *LoopCost `json:"loopCost,omitempty"`
	// CatchUp is the settlement catch-up's end state (post-finality
	// corrections become transitions).
	CatchUp *CatchUpReport `json:"catchUp,omitempty"`
	// LateCases are the late settlement exposure cases (issue 32).
	LateCases *LateCaseReport `json:"lateSettlementCases,omitempty"`
	// OwnerConflicts is issue 32's end state: Work and fences blocked on an
	// owner's conflict fact, and how many later completed.
	OwnerConflicts *OwnerConflictReport `json:"ownerConflicts,omitempty"`
	Invariants     []Check              `json:"invariants"`
	Passed         bool                 `json:"passed"`
	Notes          []string             `json:"notes,omitempty"`
}

func (s *Summary) check(name string, ok bool, detail string) {
	s.Invariants = append(s.Invariants, Check{Name: name, OK: ok, Detail: detail})
	if !ok {
		s.Passed = false
	}
}

func (s *Summary) fail(name, detail string) { s.check(name, false, detail) }

// count records a check that holds when n, a count of what, is zero.
func (s *Summary) count(name string, n int64, what string) {
	detail := ""
	if n != 0 {
		detail = fmt.Sprintf("%d %s", n, what)
	}
	s.check(name, n == 0, detail)
}

func summarize(ctx context.Context, core readmodel.Pool, cfg Config, admitted, elapsed time.Duration, m *dispatcher.Metrics) (*Summary, error) {
	s := &Summary{Runs: cfg.Runs, Chaos: cfg.Chaos, Passed: true,
		AdmitSeconds: admitted.Seconds(), DurationSeconds: elapsed.Seconds()}
	err := core.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM outbox.outbox_events),
		       count(*), count(*) FILTER (WHERE status = 'acknowledged'),
		       count(*) FILTER (WHERE status IN ('pending', 'leased')),
		       count(*) FILTER (WHERE status = 'quarantined'),
		       COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY delivered_at - created_at)), 0),
		       COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY delivered_at - created_at)), 0)
		FROM outbox.outbox_deliveries`).Scan(&s.Events, &s.Deliveries, &s.Acknowledged, &s.Open, &s.Quarantined,
		&s.LatencyP50Millis, &s.LatencyP99Millis)
	if err != nil {
		return nil, fmt.Errorf("demo summary: %w", err)
	}
	if err := core.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM outbox.outbox_delivery_attempt_starts),
		       count(*) FILTER (WHERE outcome = 'retryable'),
		       count(*) FILTER (WHERE outcome = 'lease_expired_unknown')
		FROM outbox.outbox_delivery_attempt_finishes`).Scan(&s.Attempts, &s.Retries, &s.LeaseExpiries); err != nil {
		return nil, fmt.Errorf("demo summary: %w", err)
	}
	if m != nil { // nil: the dispatchers ran in the owner processes
		s.LeaseLost = int64(counterSum(m.LeaseLost))
		calls, handed := m.ConsumerCalls()
		if s.ConsumerCalls = calls; calls > 0 {
			s.DeliveriesPerCall = handed / float64(calls)
		}
	}
	if elapsed > 0 {
		s.AcknowledgedPerSecond = float64(s.Acknowledged) / elapsed.Seconds()
	}
	if admitted > 0 {
		s.AdmissionsPerSecond = float64(cfg.Runs) / admitted.Seconds()
	}
	// Admission appends two events per run (finalization appends its own
	// later: the ledger section counts those).
	var admissionEvents int64
	if err := core.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE event_type IN ('run.created@2.0', 'wallet.reserved@2.0')`).
		Scan(&admissionEvents); err != nil {
		return nil, fmt.Errorf("demo summary: %w", err)
	}
	s.check("all_admissions_appended", admissionEvents == int64(2*(cfg.Runs+cfg.PriorRuns)),
		fmt.Sprintf("%d admission events for %d admissions", admissionEvents, cfg.Runs+cfg.PriorRuns))
	// The outbox's own invariants (package invariant), all of them: the
	// demo ends drained.
	report, err := invariant.Evaluate(ctx, core)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	for _, c := range report.In(invariant.Drained) {
		s.check(c.Name, c.OK(), c.Detail())
	}
	receipts, err := dbsqlc.New().ReceiptInvariantCounts(ctx, core)
	if err != nil {
		return nil, fmt.Errorf("demo receipt invariants: %w", err)
	}
	s.count("one_receipt_per_event", receipts.EventsWithSeveralReceipts,
		"events with more than one projector receipt (duplicated effect)")
	s.count("receipt_for_every_ack", receipts.AcksWithoutMatchingReceipt,
		"acknowledged deliveries whose frozen ack does not name the projector's receipt for the frozen projection")
	// Prove completeness in one consistent snapshot, then ask the query,
	// which compares the proof with the current inputs (OPS-4).
	rm := readmodel.New(core)
	_, err = rm.ProveCompleteness(ctx, readmodel.Params{})
	var c readmodel.Completeness
	if err == nil {
		c, err = rm.Completeness(ctx, readmodel.Params{})
	}
	if err != nil {
		s.fail("read_model_complete", err.Error())
		return s, nil
	}
	s.VerificationState, s.SnapshotCurrency = c.VerificationState, c.SnapshotCurrency
	s.ProjectionCompleteness, s.CompletenessReason = c.ProjectionCompleteness, c.VerificationReason
	if c.Integrity != nil && len(c.Integrity.Reasons) > 0 {
		s.CompletenessReason += " " + strings.Join(c.Integrity.Reasons, ",")
	}
	s.check("read_model_complete", c.VerificationState == readmodel.Verified && c.SnapshotCurrency == readmodel.VerifiedCurrent &&
		c.ProjectionCompleteness == readmodel.CompleteForSupportedScope,
		fmt.Sprintf("%s/%s/%s", c.VerificationState, c.SnapshotCurrency, c.ProjectionCompleteness))
	return s, nil
}

func counterSum(c *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) == nil {
			sum += pb.GetCounter().GetValue()
		}
	}
	return sum
}

// WriteTable prints the summary as a table.
func (s *Summary) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "  %s\t%v\n", k, v) }
	fmt.Fprintln(tw, "OceanWay demo summary")
	row("admissions", s.Runs)
	row("transport", s.Transport)
	row("driver", s.Driver)
	switch {
	case s.Processes != nil:
		row("owner reads", "over HTTP between the owner processes")
	case s.OwnerReadsOver == OwnerReadsInServe:
		row("owner reads", "the serve's own (the loop runs there)")
	case s.OwnerReadsOver == TransportHTTP:
		row("owner reads", fmt.Sprintf("over HTTP: %d calls, %d unanswered and retried", s.OwnerReadCalls, s.OwnerReadsUnanswered))
	default:
		row("owner reads", "in process (each owner's Reads behind its read interface)")
	}
	row("events appended", s.Events)
	row("deliveries", s.Deliveries)
	row("acknowledged", s.Acknowledged)
	row("open (pending/leased)", s.Open)
	row("quarantined", s.Quarantined)
	row("admissions/s", fmt.Sprintf("%.0f (%.2fs)", s.AdmissionsPerSecond, s.AdmitSeconds))
	row("acknowledged/s", fmt.Sprintf("%.0f (%.2fs total)", s.AcknowledgedPerSecond, s.DurationSeconds))
	row("latency append→ack p50", fmt.Sprintf("%.1f ms", s.LatencyP50Millis))
	row("latency append→ack p99", fmt.Sprintf("%.1f ms", s.LatencyP99Millis))
	row("attempts", s.Attempts)
	row("retries", s.Retries)
	row("lease expiries (recovered)", s.LeaseExpiries)
	row("late outcomes dropped (lease lost)", s.LeaseLost)
	row("consumer calls (deliveries per call)", fmt.Sprintf("%d (%.1f)", s.ConsumerCalls, s.DeliveriesPerCall))
	row("admissions retried (transient errors)", s.AdmissionRetries)
	if s.Chaos && s.Processes == nil {
		row("chaos: dispatcher kills", s.Kills)
		row("chaos: pauses past lease", s.Pauses)
		row("chaos: injected consumer failures", s.InjectedFailures)
		row("chaos: database restarts", s.DatabaseRestarts)
		if s.Transport == TransportHTTP {
			row("chaos: answers dropped after commit", s.DroppedResponses)
			row("chaos: owner answers dropped", s.OwnerAnswersDropped)
		}
	}
	s.writeProcesses(row)
	s.writeBoundaries(row)
	s.writeLedger(row)
	s.writeCases(row)
	s.writeCost(row)
	if s.Scenario != nil && s.CatchUp != nil {
		row("provider: post-finality corrections", fmt.Sprintf("%d down, %d up sent; %d not sent (reservation never finalized)",
			s.Scenario.CorrectionsDown, s.Scenario.CorrectionsUp, s.Scenario.CorrectionsNotFinalized))
	}
	s.writeCatchUp(row)
	s.writeLateCases(row)
	s.writeOwnerConflicts(row)
	row("completeness", fmt.Sprintf("%s / %s / %s", s.VerificationState, s.SnapshotCurrency, s.ProjectionCompleteness))
	for _, c := range s.Invariants {
		verdict := "ok"
		if !c.OK {
			verdict = "FAILED: " + c.Detail
		}
		row("invariant "+c.Name, verdict)
	}
	for _, n := range s.Notes {
		row("note", n)
	}
	verdict := "PASSED"
	if !s.Passed {
		verdict = "FAILED"
	}
	row("verdict", verdict)
	_ = tw.Flush()
}

// WriteJSON writes the summary to path.
func (s *Summary) WriteJSON(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
