package demo

import (
	"fmt"
	"strings"
)

// LoopCost is what the loop cost per finalized run until it first
// quiesced (before the post-finality corrections), measured by the loop
// benchmark's window (oceanway bench --mode loop): the same figures, on
// the demo's own run. Nil when not measured (--chaos, or the measurement
// failed: Note says why).
type LoopCost struct {
	FinalizedPerSecond float64 `json:"finalizedPerSecond"`
	WindowSeconds      float64 `json:"windowSeconds"`
	// CPU per finalized run, milliseconds: this process and the PostgreSQL
	// backends of the four databases (0 when the server is not on this
	// machine).
	ProcessCPUMillis  float64 `json:"processCpuMillisPerRun"`
	PostgresCPUMillis float64 `json:"postgresCpuMillisPerRun"`
	// Commits and rows read (seq_tup_read + idx_tup_fetch) per admitted run.
	CommitsPerRun    float64            `json:"commitsPerRun"`
	CommitsByOwner   map[string]float64 `json:"commitsPerRunByDatabase,omitempty"`
	RowsReadPerRun   float64            `json:"rowsReadPerRun"`
	RowsReadByOwner  map[string]float64 `json:"rowsReadPerRunByDatabase,omitempty"`
	StatisticsSource string             `json:"statisticsSource,omitempty"`
	Note             string             `json:"note,omitempty"`
}

func (s *Summary) writeCost(row func(string, any)) {
	c := s.Cost
	if c == nil {
		return
	}
	if c.Note != "" {
		row("loop cost", c.Note)
		return
	}
	row("loop cost: window (until quiescent)", fmt.Sprintf("%.1f s, %.1f finalized/s", c.WindowSeconds, c.FinalizedPerSecond))
	row("loop cost: CPU per finalized run", fmt.Sprintf("%.1f ms ours, %.1f ms PostgreSQL", c.ProcessCPUMillis, c.PostgresCPUMillis))
	row("loop cost: commits per run", fmt.Sprintf("%.1f (%s)", c.CommitsPerRun, perOwner(c.CommitsByOwner, "%s %.1f")))
	row("loop cost: rows read per run", fmt.Sprintf("%.0f (%s)", c.RowsReadPerRun, perOwner(c.RowsReadByOwner, "%s %.0f")))
}

func perOwner(m map[string]float64, format string) string {
	parts := make([]string, 0, len(m))
	for _, b := range []string{"core", "execution", "gateway", "metering"} {
		if v, ok := m[b]; ok {
			parts = append(parts, fmt.Sprintf(format, b, v))
		}
	}
	return strings.Join(parts, ", ")
}
