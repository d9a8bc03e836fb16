// Package simprovider is a deterministic simulated provider adapter behind
// gateway.Provider. Every decision and every observation sequence is a pure
// function of the seed and the attempt id, so the demo and the tests
// reproduce exactly. It covers text (input and output tokens), media
// (images, video seconds) and tool calls, and can produce late, missing,
// corrected and conflicting evidence, and deterministic pre-binding
// rejections; and, once asked, the owner-side fix of the usage it could not
// vouch for (Reconciled). A real provider plugs in behind the same interface.
package simprovider

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/gateway"
)

// Workloads.
const (
	WorkloadText  = "text"
	WorkloadMedia = "media"
	WorkloadTools = "tools"
)

// Evidence scenarios.
const (
	ScenarioPrompt      = "prompt"      // usage and cost available at once
	ScenarioLate        = "late"        // pending first, available later
	ScenarioMissing     = "missing"     // usage available, cost never reported
	ScenarioCorrected   = "corrected"   // available, then a corrected quantity
	ScenarioConflicting = "conflicting" // available, then conflicting reports
	ScenarioUnavailable = "unavailable" // the provider cannot report usage
	// Post-finality corrections: usage available at once, then corrected
	// after the reservation finalized (AfterFinality), down or up.
	ScenarioCorrectedDown = "corrected_down"
	ScenarioCorrectedUp   = "corrected_up"
	// ScenarioDisputed (issue 32): usage available at once; then the
	// provider sends its first usage report again with another quantity
	// (Dispute: the Gateway stores a GatewayEvidenceConflictFact@1 and can
	// no longer vouch for the evidence, so the Metering Work that reads it
	// blocks on the owner's conflict), and later a corrected report
	// (DisputeFix) the Gateway vouches for again: the owner's fix.
	ScenarioDisputed = "disputed"
)

// Scenarios lists the evidence scenarios in a fixed order.
var Scenarios = []string{ScenarioPrompt, ScenarioLate, ScenarioMissing, ScenarioCorrected, ScenarioConflicting, ScenarioUnavailable,
	ScenarioCorrectedDown, ScenarioCorrectedUp, ScenarioDisputed}

// RealisticWeights is a production-like mix (percent of bound attempts):
// mostly prompt or late-but-arriving evidence, some post-finality
// corrections, and rare usage the provider cannot vouch for (conflicting,
// unavailable), which needs the reconciliation chain, and owner conflicts
// the provider later fixes (disputed, issue 32).
var RealisticWeights = map[string]int{
	ScenarioPrompt: 52, ScenarioLate: 22, ScenarioMissing: 3, ScenarioCorrected: 5,
	ScenarioCorrectedDown: 9, ScenarioCorrectedUp: 5, ScenarioConflicting: 1, ScenarioUnavailable: 1,
	ScenarioDisputed: 2,
}

// Config tunes the simulation.
type Config struct {
	Seed int64
	// RejectPercent of attempts are rejected before binding (0..100).
	RejectPercent int
	// Force fixes the scenario of every attempt ("" = by seed).
	Force string
	// ForceReject rejects every attempt when set.
	ForceReject bool
	// Weights, when set, draws the scenario by these weights (scenario →
	// weight, see RealisticWeights) instead of uniformly over Scenarios.
	Weights map[string]int
}

// Provider is the simulated adapter.
type Provider struct{ cfg Config }

// New returns the simulated adapter.
func New(cfg Config) *Provider { return &Provider{cfg: cfg} }

var _ gateway.Provider = (*Provider)(nil)

// roll returns a deterministic number for (seed, attempt, purpose).
func (p *Provider) roll(attemptID, purpose string) uint64 {
	h := sha256.New()
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(p.cfg.Seed))
	h.Write(seed[:])
	h.Write([]byte(attemptID))
	h.Write([]byte(purpose))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

// Workload is the attempt's workload.
func (p *Provider) Workload(attemptID string) string {
	return []string{WorkloadText, WorkloadMedia, WorkloadTools}[p.roll(attemptID, "workload")%3]
}

// Scenario is the attempt's evidence scenario.
func (p *Provider) Scenario(attemptID string) string {
	if p.cfg.Force != "" {
		return p.cfg.Force
	}
	r := p.roll(attemptID, "scenario")
	if len(p.cfg.Weights) == 0 {
		return Scenarios[r%uint64(len(Scenarios))]
	}
	total := 0
	for _, sc := range Scenarios {
		total += max(p.cfg.Weights[sc], 0)
	}
	if total == 0 {
		return ScenarioPrompt
	}
	pick := int(r % uint64(total))
	for _, sc := range Scenarios { // fixed order: deterministic
		if w := max(p.cfg.Weights[sc], 0); pick < w {
			return sc
		} else {
			pick -= w
		}
	}
	return ScenarioPrompt
}

// Route rejects a deterministic share of attempts before any side effect
// (reason no_capacity or policy_denied) and binds the rest to a simulated
// route derived from the attempt's manifest.
func (p *Provider) Route(m *contract.AttemptExecutionManifest) gateway.Decision {
	r := p.roll(m.ExecutionAttemptID, "route")
	if p.cfg.ForceReject || int(r%100) < p.cfg.RejectPercent {
		return gateway.Decision{RejectReason: []string{"no_capacity", "policy_denied"}[(r/100)%2]}
	}
	return gateway.Decision{Route: &contract.Route{
		ChannelID: "channel/sim-" + strconv.FormatUint(r%3, 10), SupplyID: "supply/sim-" + strconv.FormatUint((r/3)%2, 10),
		CredentialVersion: int64(1 + (r/7)%3), ProviderModel: "sim/" + p.Workload(m.ExecutionAttemptID), AdapterID: "adapter/simulated",
	}}
}

// Execute returns the evidence observations of a bound attempt.
func (p *Provider) Execute(_ context.Context, b *contract.AttemptRouteBinding) ([]gateway.Observation, error) {
	id := b.ExecutionAttemptID
	dims := p.dimensions(id)
	cost := gateway.Observation{EvidenceKind: contract.EvidenceProviderCost, DimensionKey: "cost.usd_micros", Quantity: p.quantity(id, "cost", 90000)}
	var out []gateway.Observation
	switch p.Scenario(id) {
	case ScenarioPrompt, ScenarioCorrectedDown, ScenarioCorrectedUp, ScenarioDisputed:
		out = append(available(dims, "r1"), available([]gateway.Observation{cost}, "r1")...)
	case ScenarioLate:
		out = append(state(dims, contract.AvailabilityPending, "provider_report_pending"), state([]gateway.Observation{cost}, contract.AvailabilityPending, "provider_report_pending")...)
		out = append(out, available(dims, "r1")...)
		out = append(out, available([]gateway.Observation{cost}, "r1")...)
	case ScenarioMissing:
		out = append(available(dims, "r1"), state([]gateway.Observation{cost}, contract.AvailabilityNotReported, "provider_silent")...)
	case ScenarioCorrected:
		out = append(available(dims, "r1"), available([]gateway.Observation{cost}, "r1")...)
		// A recount before closure, up or down (up when 1 cannot go down).
		recount := p.correction(id, p.roll(id, "direction")%2 == 0, "r2")
		if recount == nil {
			recount = p.correction(id, true, "r2")
		}
		out = append(out, recount...)
	case ScenarioConflicting:
		out = append(available(dims, "r1"), state(dims[:1], contract.AvailabilityConflicting, "provider_reports_disagree")...)
		out = append(out, state([]gateway.Observation{cost}, contract.AvailabilityPending, "provider_report_pending")...)
	case ScenarioUnavailable:
		out = append(state(dims, contract.AvailabilityUnavailable, "provider_usage_unavailable"), state([]gateway.Observation{cost}, contract.AvailabilityUnavailable, "provider_cost_unavailable")...)
	}
	return out, nil
}

// quantity is the attempt's deterministic quantity in 1..max for purpose.
func (p *Provider) quantity(id, purpose string, max uint64) string {
	return strconv.FormatUint(1+p.roll(id, purpose)%max, 10)
}

// dimensions are the usage observations of the attempt's workload.
func (p *Provider) dimensions(id string) []gateway.Observation {
	q := func(purpose string, max uint64) string { return p.quantity(id, purpose, max) }
	switch p.Workload(id) {
	case WorkloadText:
		return []gateway.Observation{usage("text.input_tokens", q("in", 4000)), usage("text.output_tokens", q("out", 2000))}
	case WorkloadMedia:
		return []gateway.Observation{usage("media.images", q("img", 8)), usage("media.video_seconds", q("vid", 120))}
	default:
		return []gateway.Observation{usage("tools.calls", q("calls", 12)), usage("text.input_tokens", q("in", 1000))}
	}
}

// Dimensions are the usage observations (dimension and quantity) the
// provider reports for the attempt: its usage charge dimensions.
func (p *Provider) Dimensions(attemptID string) []gateway.Observation { return p.dimensions(attemptID) }

// AfterFinality returns the observations the provider reports after the
// reservation finalized: for corrected_down the first dimension's usage
// corrected below the original report (at least 1 below; a refund), for
// corrected_up above it (a late exposure under reconcile_before_charge).
// Other scenarios report nothing later.
func (p *Provider) AfterFinality(attemptID string) []gateway.Observation {
	switch p.Scenario(attemptID) {
	case ScenarioCorrectedDown:
		return p.correction(attemptID, false, "r2-post-finality")
	case ScenarioCorrectedUp:
		return p.correction(attemptID, true, "r2-post-finality")
	default:
		return nil
	}
}

// Dispute returns, for a disputed attempt, the provider's contradiction of
// its first usage report: the first dimension reported again under the same
// report id with another quantity (one more). The Gateway cannot vouch for
// the evidence any more (GatewayEvidenceConflictFact@1). nil for the other
// scenarios.
func (p *Provider) Dispute(attemptID string) []gateway.Observation {
	if p.Scenario(attemptID) != ScenarioDisputed {
		return nil
	}
	c := p.dimensions(attemptID)[0]
	orig, _ := strconv.ParseUint(c.Quantity, 10, 64) // our own decimal digits
	c.Quantity = strconv.FormatUint(orig+1, 10)
	return available([]gateway.Observation{c}, "r1")
}

// DisputeFix returns the provider's fix of a disputed report: a corrected
// report (a new report id) of the first dimension, down from the original
// (a refund after finality), or up when the original is 1. nil for the
// other scenarios.
func (p *Provider) DisputeFix(attemptID string) []gateway.Observation {
	if p.Scenario(attemptID) != ScenarioDisputed {
		return nil
	}
	if fix := p.correction(attemptID, false, "r2-corrected"); fix != nil {
		return fix
	}
	return p.correction(attemptID, true, "r2-corrected")
}

// Reconciled returns the observations by which the provider, asked about
// usage it could not vouch for, settles it (the owner-side fix of a
// Finalization reconciliation case): for conflicting, the first dimension
// available again at its first report's quantity (the disagreeing reports
// reconciled); for unavailable, every usage dimension available at the
// quantity the attempt used. Each is the successor of the chain's current
// availability (report r3). Cost evidence is left as it was (the cost lane
// does not settle), and the other scenarios need no fix (nil).
func (p *Provider) Reconciled(attemptID string) []gateway.Observation {
	dims := p.dimensions(attemptID)
	switch p.Scenario(attemptID) {
	case ScenarioConflicting:
		return available(dims[:1], "r3-reconciled")
	case ScenarioUnavailable:
		return available(dims, "r3-reconciled")
	default:
		return nil
	}
}

// correction reports the first dimension's usage corrected from the
// original report: up by 1 to half of it plus one, or down by 1 to half of
// it (never below 1; nil when the original is 1 and cannot go down). A
// correction stays near the original, as a provider's recount does.
func (p *Provider) correction(attemptID string, up bool, report string) []gateway.Observation {
	dims := p.dimensions(attemptID)
	orig, _ := strconv.ParseUint(dims[0].Quantity, 10, 64) // our own decimal digits
	var corrected uint64
	switch {
	case up:
		corrected = orig + 1 + p.roll(attemptID, "up")%(orig/2+1)
	case orig < 2:
		return nil
	default:
		corrected = orig - 1 - p.roll(attemptID, "down")%(orig/2)
	}
	c := dims[0]
	c.Quantity = strconv.FormatUint(corrected, 10)
	return available([]gateway.Observation{c}, report)
}

func usage(dim, qty string) gateway.Observation {
	return gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: dim, Quantity: qty}
}

func available(obs []gateway.Observation, report string) []gateway.Observation {
	out := make([]gateway.Observation, len(obs))
	for i, o := range obs {
		o.State, o.ReasonCode, o.ReportID = contract.AvailabilityAvailable, "provider_reported", "sim-"+report
		out[i] = o
	}
	return out
}

func state(obs []gateway.Observation, st, reason string) []gateway.Observation {
	out := make([]gateway.Observation, len(obs))
	for i, o := range obs {
		o.State, o.ReasonCode, o.Quantity, o.ReportID = st, reason, "", ""
		out[i] = o
	}
	return out
}
