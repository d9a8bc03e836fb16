// Command gen writes the Grafana dashboards of OceanWay Core (issue 36) as
// JSON under deploy/grafana/, built with the Grafana foundation SDK so the
// dashboards are reviewed as code:
//
//	go run ./deploy/grafana/gen            # writes deploy/grafana/*.json
//	go run ./deploy/grafana/gen -out DIR
//
// Output is deterministic (same code, same bytes). Every query is PromQL over
// the metric catalog `oceanway serve` exports; the data source is the
// template variable ${datasource}. internal/cli/observability_test.go parses
// every query and fails on a metric name a real serve does not export.
//
// The dashboards use the SDK's v1 dashboard model (package dashboard), which
// the SDK marks deprecated in favour of dashboardv2: v1 JSON is what file
// provisioning and the import dialog of every current Grafana accept, while
// the v2 schema needs Grafana 12's v2 dashboard API.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

func main() {
	out := flag.String("out", filepath.Join("deploy", "grafana"), "directory the dashboards are written to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	for _, d := range dashboards() {
		raw, err := render(d.build())
		if err != nil {
			return fmt.Errorf("%s: %w", d.file, err)
		}
		if err := os.WriteFile(filepath.Join(dir, d.file), raw, 0o644); err != nil { //nolint:gosec // dashboards are public files
			return err
		}
	}
	return nil
}

// render builds the dashboard and pretty-prints it (two-space indent,
// trailing newline, no HTML escaping of PromQL's < and >).
func render(b *builder) ([]byte, error) {
	d, err := b.Build()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// builder is the SDK's v1 dashboard builder (see the package comment).
type builder = dashboard.DashboardBuilder //nolint:staticcheck // the v1 JSON model (see doc): importable by every current Grafana

type dashboardFile struct {
	file  string
	build func() *builder
}

func dashboards() []dashboardFile {
	return []dashboardFile{
		{"oceanway-outbox.json", outbox},
		{"oceanway-work.json", workQueues},
		{"oceanway-billing.json", billing},
		{"oceanway-metering.json", metering},
		{"oceanway-execution-gateway.json", executionGateway},
		{"oceanway-finality.json", finality},
	}
}

// datasource is the dashboard's data source variable.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// rate is the range every rate and increase uses.
const rate = "[$__rate_interval]"

// base is a dashboard with the shared variable, links, time and tags.
func base(uid, title, description string) *builder {
	return dashboard.NewDashboardBuilder(title). //nolint:staticcheck // the v1 JSON model (see doc): importable by every current Grafana
							Uid(uid).
							Description(description).
							Tags([]string{"oceanway"}).
							Editable().
							Refresh("30s").
							Time("now-6h", "now").
							Timezone(common.TimeZoneBrowser).
							Tooltip(dashboard.DashboardCursorSyncCrosshair).
							WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
							Link(dashboard.NewDashboardLinkBuilder("OceanWay").Type(dashboard.DashboardLinkTypeDashboards).
								Tags([]string{"oceanway"}).AsDropdown(true).IncludeVars(true).KeepTime(true))
}

// q is one query: PromQL and its legend.
type q struct{ expr, legend string }

func targets(qs []q) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for i, x := range qs {
		out = append(out, prometheus.NewDataqueryBuilder().
			Datasource(datasource).
			RefId(string(rune('A'+i))).
			Expr(x.expr).
			LegendFormat(x.legend).
			Range())
	}
	return out
}

// panelIDs numbers the panels of one dashboard.
type panelIDs struct{ n uint32 }

func (p *panelIDs) next() uint32 { p.n++; return p.n }

// row is a row header with its own panel id.
func (p *panelIDs) row(title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Id(p.next())
}

// series is a time-series panel, half the width.
func (p *panelIDs) series(title, description, unit string, qs ...q) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Id(p.next()).
		Title(title).
		Description(description).
		Datasource(datasource).
		Span(12).Height(8).
		Unit(unit).
		Min(0).
		FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).ShowLegend(true).Calcs([]string{"lastNotNull", "max"})).
		Targets(targets(qs))
}

// single is a stat panel, a quarter of the width; thresholds turn it red at
// red (green below).
func (p *panelIDs) single(title, description, unit string, red float64, qs ...q) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(p.next()).
		Title(title).
		Description(description).
		Datasource(datasource).
		Span(6).Height(4).
		Unit(unit).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeBackground).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Thresholds(dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{
			{Value: nil, Color: "green"},
			{Value: cog.ToPtr(red), Color: "red"},
		})).
		Targets(targets(qs))
}

// quantile is a histogram quantile over the family's buckets, by the labels.
func quantile(phi float64, family, by, selector string) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (le, %s) (rate(%s_bucket%s%s)))", phi, by, family, selector, rate)
}

func outbox() *builder {
	p := &panelIDs{}
	return base("oceanway-outbox", "OceanWay outbox",
		"Deliveries of every producer database: backlog, throughput, retries, quarantines, leases, latency, and the Operations read model. Runbooks: docs/runbooks/outbox.md.").
		WithRow(p.row("State")).
		WithPanel(p.single("Quarantined deliveries", "Quarantine rows per producer database (terminal; see the runbook).", "short", 1,
			q{"sum(oceanway_outbox_quarantined_deliveries)", "quarantined"})).
		WithPanel(p.single("Dispatchers unhealthy", "Boundaries whose last claim round failed.", "short", 1,
			q{"count(oceanway_outbox_dispatcher_healthy == 0) or vector(0)", "unhealthy"})).
		WithPanel(p.single("Oldest pending delivery", "Age of the oldest pending delivery across destinations.", "s", 600,
			q{`max(oceanway_outbox_oldest_open_delivery_age_seconds{status="pending"})`, "oldest pending"})).
		WithPanel(p.single("Open deliveries", "Pending and leased deliveries across destinations.", "short", 1000,
			q{"sum(oceanway_outbox_open_deliveries)", "open"})).
		WithPanel(p.series("Open deliveries by destination", "Non-terminal deliveries by producer database, destination and status.", "short",
			q{"sum by (boundary, destination, status) (oceanway_outbox_open_deliveries)", "{{boundary}} → {{destination}} {{status}}"})).
		WithPanel(p.series("Oldest open delivery", "Age of the oldest non-terminal delivery since its append.", "s",
			q{"max by (boundary, destination, status) (oceanway_outbox_oldest_open_delivery_age_seconds)", "{{boundary}} → {{destination}} {{status}}"})).
		WithPanel(p.series("Quarantined deliveries by destination", "Quarantine rows per producer database and destination.", "short",
			q{"max by (boundary, destination) (oceanway_outbox_quarantined_deliveries)", "{{boundary}} → {{destination}}"})).
		WithPanel(p.series("Dispatcher health and version", "1 while the last claim round of the boundary's dispatchers succeeded; the running versions and regions.", "short",
			q{"min by (boundary) (oceanway_outbox_dispatcher_healthy)", "healthy {{boundary}}"},
			q{"count by (version, region) (oceanway_outbox_dispatcher_info)", "{{version}} {{region}}"})).
		WithRow(p.row("Throughput and failures")).
		WithPanel(p.series("Claimed and acknowledged", "Deliveries claimed and acknowledged with a verified receipt, per second.", "ops",
			q{"sum by (boundary, destination) (rate(oceanway_outbox_claimed_total" + rate + "))", "claimed {{boundary}} → {{destination}}"},
			q{"sum by (boundary, destination) (rate(oceanway_outbox_acknowledged_total" + rate + "))", "acknowledged {{boundary}} → {{destination}}"})).
		// The by-code counters (retried, failures, quarantined) are labelled
		// by an open set of normalized codes, so they exist only after a
		// first failure; the panels use the always-exported series and the
		// runbooks give the by-code queries (docs/runbooks/outbox.md).
		WithPanel(p.series("Failed consumer calls", "Consumer calls that returned an error (retry, wait or refusal), per second.", "ops",
			q{"sum by (boundary, destination) (rate(oceanway_outbox_consumer_call_seconds_count{result=\"error\"}" + rate + "))", "{{boundary}} → {{destination}}"})).
		WithPanel(p.series("New quarantines", "Quarantined deliveries added in the last hour, read from the database.", "short",
			q{"sum by (boundary, destination) (delta(oceanway_outbox_quarantined_deliveries[1h]))", "{{boundary}} → {{destination}}"})).
		WithRow(p.row("Latency")).
		WithPanel(p.series("Append to ack", "Time from the append commit to the acknowledgement, p50 and p99.", "s",
			q{quantile(0.5, "oceanway_outbox_append_to_ack_seconds", "destination", ""), "p50 {{destination}}"},
			q{quantile(0.99, "oceanway_outbox_append_to_ack_seconds", "destination", ""), "p99 {{destination}}"})).
		WithPanel(p.series("Consumer call p99", "Duration of the dispatcher's consumer calls (transport included), p99.", "s",
			q{quantile(0.99, "oceanway_outbox_consumer_call_seconds", "destination", ""), "{{destination}}"})).
		WithPanel(p.series("Consumer apply p99", "Duration of the consumer's own apply (in process), by consumer and result, p99.", "s",
			q{quantile(0.99, "oceanway_consumer_apply_seconds", "consumer, result", ""), "{{consumer}} {{result}}"})).
		WithPanel(p.series("Consumer applies", "Consumer applies per second, by consumer and result.", "ops",
			q{"sum by (consumer, result) (rate(oceanway_consumer_apply_seconds_count" + rate + "))", "{{consumer}} {{result}}"})).
		WithRow(p.row("Leases and outcomes")).
		WithPanel(p.series("Lease expiries", "Expired attempts recovered as lease_expired_unknown.", "ops",
			q{"sum by (boundary, destination) (rate(oceanway_outbox_lease_expired_total" + rate + "))", "{{boundary}} → {{destination}}"})).
		WithPanel(p.series("Leases lost", "Late outcomes dropped because the fence no longer held.", "ops",
			q{"sum by (destination, outcome) (rate(oceanway_outbox_lease_lost_total" + rate + "))", "{{destination}} {{outcome}}"})).
		WithPanel(p.series("Outcome record failures", "Outcomes the database did not record, by class (transient includes SQLSTATE class 42).", "ops",
			q{"sum by (destination, outcome, class) (rate(oceanway_outbox_outcome_record_failures_total" + rate + "))", "{{destination}} {{outcome}} {{class}}"})).
		WithPanel(p.series("Operations read model", "Completeness verified_current (1/0) and the read model's gaps.", "short",
			q{"max by (projection, projection_version) (oceanway_operations_completeness_verified_current)", "verified_current {{projection}}@{{projection_version}}"},
			q{"sum(oceanway_operations_missing_receipts)", "missing receipts"},
			q{"sum(oceanway_operations_unresolved_revision_gaps)", "unresolved revision gaps"},
			q{"sum(oceanway_operations_unsupported_events)", "unsupported events"},
			q{"sum(oceanway_operations_pending_unlinked_reservations)", "pending unlinked reservations"}))
}

func workQueues() *builder {
	p := &panelIDs{}
	return base("oceanway-work", "OceanWay Work queues",
		"Every queue of Work on the fenced Work primitive, of every owner: metering_eligibility, metering_provider_cost, billing_finalization, billing_settlement_catch_up. Runbooks: docs/runbooks/work.md.").
		WithRow(p.row("Backlog")).
		WithPanel(p.series("Depth", "Claimable Work (due now) per queue, read at scrape time.", "short",
			q{"max by (queue) (oceanway_work_depth)", "{{queue}}"})).
		WithPanel(p.series("Oldest claimable Work", "How long the oldest claimable Work of each queue has waited.", "s",
			q{"max by (queue) (oceanway_work_oldest_claimable_age_seconds)", "{{queue}}"})).
		WithRow(p.row("Attempts")).
		WithPanel(p.series("Attempts started", "Attempts started per second (claimed with a fresh fencing token).", "ops",
			q{"sum by (queue) (rate(oceanway_work_attempts_total" + rate + "))", "{{queue}}"})).
		WithPanel(p.series("Attempt results", "Attempts by result: finished, retry, blocked, fenced, failed.", "ops",
			q{"sum by (queue, result) (rate(oceanway_work_attempt_results_total" + rate + "))", "{{queue}} {{result}}"})).
		WithPanel(p.series("Finishes by outcome", "Work finished, by the queue's outcome.", "ops",
			q{"sum by (queue, outcome) (rate(oceanway_work_finishes_total" + rate + "))", "{{queue}} {{outcome}}"})).
		WithPanel(p.series("Blocked attempts", "Attempts that recorded a visible Blocked fact (the Work stays active and backs off).", "ops",
			q{"sum by (queue) (rate(oceanway_work_blocked_total" + rate + "))", "{{queue}}"})).
		WithPanel(p.series("Attempt duration p99", "Attempt duration by queue and result, p99 (the lease is 30s).", "s",
			q{quantile(0.99, "oceanway_work_attempt_seconds", "queue, result", ""), "{{queue}} {{result}}"})).
		WithPanel(p.series("Lease expiries", "Attempts whose renewal found the Work taken by a newer attempt.", "ops",
			q{"sum by (queue) (rate(oceanway_work_lease_expired_total" + rate + "))", "{{queue}}"}))
}

func billing() *builder {
	p := &panelIDs{}
	return base("oceanway-billing", "OceanWay Billing",
		"Billing in the core database: finalization fences by state and waiting reason, decisions, settlement transitions, catch-up fences and open late exposures. Reconciliation cases: oceanway case list and /admin/cases. Runbooks: docs/runbooks/billing.md.").
		WithRow(p.row("Now")).
		WithPanel(p.single("Reservations waiting", "Finalization fences awaiting finalization (any reason).", "short", 1,
			q{`sum(oceanway_billing_fences{state="awaiting_finalization"}) or vector(0)`, "awaiting"})).
		WithPanel(p.single("Open late exposures", "Open late settlement exposures (blocked, never charged automatically).", "short", 1,
			q{"oceanway_billing_late_exposures_open", "open"})).
		WithPanel(p.single("Open exposure amount", "Sum of the open late settlement exposures (credits).", "short", 0.000001,
			q{"oceanway_billing_late_exposures_open_amount", "amount"})).
		WithPanel(p.single("Oldest open exposure", "Age of the oldest open late settlement exposure.", "s", 86400,
			q{"oceanway_billing_late_exposure_oldest_open_age_seconds", "oldest"})).
		WithRow(p.row("Finalization")).
		WithPanel(p.series("Fences by state and waiting reason", "Finalization fences not committed.", "short",
			q{"sum by (state, waiting_reason) (oceanway_billing_fences)", "{{state}} {{waiting_reason}}"})).
		WithPanel(p.series("Oldest waiting fence", "Time since the oldest fence of each state and reason last moved.", "s",
			q{"max by (state, waiting_reason) (oceanway_billing_fence_oldest_age_seconds)", "{{state}} {{waiting_reason}}"})).
		WithPanel(p.series("Finalization decisions", "Decisions per second: settle_and_release_remainder, release_all, blocked, reconciliation_required.", "ops",
			q{"sum by (decision) (rate(oceanway_billing_finalization_decisions_total" + rate + "))", "{{decision}}"})).
		WithPanel(p.series("Billing Work queues", "Claimable Work and its oldest age of the two Billing queues.", "short",
			q{`max by (queue) (oceanway_work_depth{queue=~"billing_.*"})`, "depth {{queue}}"})).
		WithRow(p.row("After finality")).
		WithPanel(p.series("Settlement transitions by kind", "Transitions per second: refund, adjustment, late_settlement_exposure.", "ops",
			q{"sum by (kind) (rate(oceanway_billing_settlement_transitions_total" + rate + "))", "{{kind}}"})).
		WithPanel(p.series("Catch-up fences by state", "Settlement catch-up fences not caught up.", "short",
			q{"sum by (state) (oceanway_billing_catch_up_fences)", "{{state}}"})).
		WithPanel(p.series("Open late exposures", "Open exposures and their amount over time.", "short",
			q{"oceanway_billing_late_exposures_open", "open"},
			q{"oceanway_billing_late_exposures_open_amount", "amount (credits)"})).
		WithPanel(p.series("Billing state read", "1 when Billing's scrape-time state could be read from the core database.", "short",
			q{"min(oceanway_billing_scrape_ok)", "scrape ok"}))
}

func metering() *builder {
	p := &panelIDs{}
	return base("oceanway-metering", "OceanWay Metering",
		"Metering: blocked Work per lane, settlement inputs awaiting evidence, provider cost lanes, the two metering queues and the input processor's deliveries. Runbooks: docs/runbooks/metering.md.").
		WithRow(p.row("Now")).
		WithPanel(p.single("Blocked Work", "Active Metering Work with a recorded Blocked fact.", "short", 1,
			q{"sum(oceanway_metering_blocked_work)", "blocked"})).
		WithPanel(p.single("Inputs awaiting evidence", "Settlement inputs waiting for provider evidence.", "short", 100,
			q{"oceanway_metering_settlement_inputs_awaiting_evidence", "awaiting"})).
		WithPanel(p.single("Cost conflicts", "Provider cost lanes blocked on a processing conflict or requiring reconciliation.", "short", 1,
			q{`sum(oceanway_metering_cost_lanes{state=~"blocked_on_processing_conflict|reconciliation_required"}) or vector(0)`, "conflicts"})).
		WithPanel(p.single("Metering state read", "1 when Metering's scrape-time state could be read.", "short", 2,
			q{"min(oceanway_metering_scrape_ok)", "scrape ok"})).
		WithRow(p.row("Lanes")).
		WithPanel(p.series("Blocked Work by lane", "Active Work with a recorded Blocked fact, by lane.", "short",
			q{"max by (lane) (oceanway_metering_blocked_work)", "{{lane}}"})).
		WithPanel(p.series("Provider cost lanes by state", "Cost lanes waiting for evidence, requiring reconciliation, blocked on a processing conflict.", "short",
			q{"sum by (state) (oceanway_metering_cost_lanes)", "{{state}}"})).
		WithPanel(p.series("Metering Work queues", "Claimable Work and the oldest claimable age of the two metering lanes.", "short",
			q{`max by (queue) (oceanway_work_depth{queue=~"metering_.*"})`, "depth {{queue}}"},
			q{`max by (queue) (oceanway_work_oldest_claimable_age_seconds{queue=~"metering_.*"})`, "oldest (s) {{queue}}"})).
		WithPanel(p.series("Settlement inputs awaiting evidence", "Settlement inputs waiting for provider evidence.", "short",
			q{"oceanway_metering_settlement_inputs_awaiting_evidence", "awaiting evidence"})).
		WithRow(p.row("Input processor")).
		WithPanel(p.series("Deliveries to the input processor", "Open deliveries to metering_input_processor from Execution and Gateway.", "short",
			q{`sum by (boundary, status) (oceanway_outbox_open_deliveries{destination="metering_input_processor"})`, "{{boundary}} {{status}}"})).
		WithPanel(p.series("Input processor apply p99", "Duration of the Metering input processor's apply, p99.", "s",
			q{quantile(0.99, "oceanway_consumer_apply_seconds", "result", `{consumer="metering_input_processor"}`), "{{result}}"}))
}

func executionGateway() *builder {
	p := &panelIDs{}
	return base("oceanway-execution-gateway", "OceanWay Execution and Gateway",
		"The Execution owner (runs accepting attempts) and the Gateway owner (provider evidence not available yet), and the deliveries their databases produce.").
		WithRow(p.row("Execution")).
		WithPanel(p.series("Runs accepting attempts", "Runs whose execution still accepts attempts.", "short",
			q{"oceanway_execution_runs_accepting_attempts", "runs"})).
		WithPanel(p.series("Oldest accepting run", "Age of the oldest run still accepting attempts.", "s",
			q{"oceanway_execution_oldest_accepting_run_age_seconds", "oldest"})).
		WithRow(p.row("Gateway")).
		WithPanel(p.series("Evidence not available", "Provider evidence chains whose Current availability is pending, not reported, unavailable or conflicting.", "short",
			q{"sum by (evidence_kind, state) (oceanway_gateway_availability_not_available)", "{{evidence_kind}} {{state}}"})).
		WithPanel(p.series("Oldest evidence not available", "Age of the oldest such Current availability, by evidence kind and state.", "s",
			q{"max by (evidence_kind, state) (oceanway_gateway_availability_oldest_not_available_age_seconds)", "{{evidence_kind}} {{state}}"})).
		WithRow(p.row("Their deliveries")).
		WithPanel(p.series("Open deliveries", "Non-terminal deliveries produced by the execution and gateway databases.", "short",
			q{`sum by (boundary, destination, status) (oceanway_outbox_open_deliveries{boundary=~"execution|gateway"})`, "{{boundary}} → {{destination}} {{status}}"})).
		WithPanel(p.series("Acknowledged", "Deliveries acknowledged per second.", "ops",
			q{`sum by (boundary, destination) (rate(oceanway_outbox_acknowledged_total{boundary=~"execution|gateway"}` + rate + "))", "{{boundary}} → {{destination}}"})).
		WithPanel(p.series("Owner state read", "1 when the owner's scrape-time state could be read.", "short",
			q{"min(oceanway_execution_scrape_ok)", "execution"},
			q{"min(oceanway_gateway_scrape_ok)", "gateway"}))
}

func finality() *builder {
	p := &panelIDs{}
	return base("oceanway-finality", "OceanWay finality loop",
		"From admission to finalization and after: admissions delivered, runs executing, closures and settlement inputs reaching Billing, fences, decisions, transitions and exposures. Reconciliation cases: oceanway case list and /admin/cases.").
		WithRow(p.row("Admission and execution")).
		WithPanel(p.series("Admission events delivered", "Core events acknowledged by the Operations projector per second (two per admission).", "ops",
			q{`sum(rate(oceanway_outbox_acknowledged_total{boundary="core", destination="core_operations"}` + rate + "))", "core → core_operations"})).
		WithPanel(p.series("Runs executing", "Runs accepting attempts, and provider evidence the Gateway still waits for.", "short",
			q{"oceanway_execution_runs_accepting_attempts", "runs accepting attempts"},
			q{`sum(oceanway_gateway_availability_not_available{state="pending"})`, "evidence pending"})).
		WithRow(p.row("Into Billing")).
		WithPanel(p.series("Closures and settlement inputs in flight", "Open deliveries to the Billing finalization coordinator (closures) and the settlement catch-up (settlement inputs).", "short",
			q{`sum by (boundary, destination) (oceanway_outbox_open_deliveries{destination=~"billing_finalization_coordinator|billing_settlement_catch_up"})`, "{{boundary}} → {{destination}}"})).
		WithPanel(p.series("Append to ack into Billing p99", "Append-to-ack latency of the deliveries into Billing, p99.", "s",
			q{quantile(0.99, "oceanway_outbox_append_to_ack_seconds", "destination", `{destination=~"billing_finalization_coordinator|billing_settlement_catch_up"}`), "{{destination}}"})).
		WithRow(p.row("Finalization")).
		WithPanel(p.series("Fences by state and waiting reason", "Finalization fences not committed (pending_evaluation, awaiting_finalization with the reason, reconciliation_required).", "short",
			q{"sum by (state, waiting_reason) (oceanway_billing_fences)", "{{state}} {{waiting_reason}}"})).
		WithPanel(p.series("Oldest waiting fence", "Time since the oldest fence of each state and reason last moved.", "s",
			q{"max by (state, waiting_reason) (oceanway_billing_fence_oldest_age_seconds)", "{{state}} {{waiting_reason}}"})).
		WithPanel(p.series("Finalization decisions", "Decisions per second by kind.", "ops",
			q{"sum by (decision) (rate(oceanway_billing_finalization_decisions_total" + rate + "))", "{{decision}}"})).
		WithPanel(p.series("Finalization queue", "Claimable finalization Work and blocked attempts.", "short",
			q{`max(oceanway_work_depth{queue="billing_finalization"})`, "depth"},
			q{`sum(rate(oceanway_work_blocked_total{queue="billing_finalization"}` + rate + "))", "blocked attempts/s"})).
		WithRow(p.row("After finality")).
		WithPanel(p.series("Settlement transitions by kind", "refund, adjustment, late_settlement_exposure per second.", "ops",
			q{"sum by (kind) (rate(oceanway_billing_settlement_transitions_total" + rate + "))", "{{kind}}"})).
		WithPanel(p.series("Open late exposures", "Open exposures (never charged automatically) and catch-up fences not caught up.", "short",
			q{"oceanway_billing_late_exposures_open", "open exposures"},
			q{"sum by (state) (oceanway_billing_catch_up_fences)", "catch-up {{state}}"})).
		WithPanel(p.series("Metering blocks in the loop", "Blocked Metering Work and settlement inputs awaiting evidence: what keeps fences waiting.", "short",
			q{"sum by (lane) (oceanway_metering_blocked_work)", "blocked {{lane}}"},
			q{"oceanway_metering_settlement_inputs_awaiting_evidence", "inputs awaiting evidence"}))
}
