package loop

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report: one column per case.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, f func(c Case) string) {
		cells := []string{name}
		for _, c := range r.Cases {
			cells = append(cells, f(c))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	num := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	row("loop benchmark", func(c Case) string { return fmt.Sprintf("%d runs", c.Runs) })
	row("offered runs/s", func(c Case) string {
		if c.Rate <= 0 {
			return fmt.Sprintf("saturation (%d drivers)", c.Drivers)
		}
		return num(c.Rate)
	})
	row("started runs/s", func(c Case) string { return num(c.Driver.StartedPerSecond) })
	row("driver behind schedule", func(c Case) string {
		if c.Rate <= 0 {
			return "-"
		}
		return fmt.Sprintf("%v (lag p99 %.0f ms, max %.0f ms)", c.Driver.Behind, c.Driver.Lag.P99, c.Driver.Lag.Max)
	})
	row("runs in flight (max)", func(c Case) string { return fmt.Sprint(c.Driver.MaxInFlight) })
	row("scenario p50/p99 ms", func(c Case) string { return fmt.Sprintf("%.0f / %.0f", c.Driver.Scenario.P50, c.Driver.Scenario.P99) })
	row("admitted runs/s", func(c Case) string { return num(c.AdmittedPerSecond) })
	row("finalized runs/s", func(c Case) string { return num(c.FinalizedPerSecond) })
	row("finalized / waiting / open", func(c Case) string {
		return fmt.Sprintf("%d / %d / %d of %d", c.Finalized, c.WaitingReconciliation, c.StillOpen, c.Admitted)
	})
	row("admission→finalization p50 ms", func(c Case) string { return num(c.FinalizeP50Millis) })
	row("admission→finalization p99 ms", func(c Case) string { return num(c.FinalizeP99Millis) })
	row("  without disputed runs p50/p99 ms", func(c Case) string {
		return fmt.Sprintf("%s / %s", num(c.UndisputedP50Millis), num(c.UndisputedP99Millis))
	})
	row("window s", func(c Case) string { return num(c.WindowSeconds) })
	row("CPU ms/finalized run: ours", func(c Case) string { return num(c.ProcessMillisPerRun) })
	row("CPU ms/finalized run: PostgreSQL", func(c Case) string { return num(c.BackendMillisPerRun) })
	row("machine busy", func(c Case) string { return fmt.Sprintf("%.0f%%", 100*c.CPU.MachineBusy) })
	row("commits/run", func(c Case) string { return num(c.CommitsPerRun) })
	row("rows read/run", func(c Case) string { return num(c.RowsReadPerRun) })
	if len(r.Cases) > 0 {
		for i := range r.Cases[0].Databases {
			b := r.Cases[0].Databases[i].Boundary
			pick := func(c Case) (DatabaseFigures, bool) {
				if i < len(c.Databases) {
					return c.Databases[i], true
				}
				return DatabaseFigures{}, false
			}
			row("  "+b+": commits/run (idle/s)", func(c Case) string {
				d, ok := pick(c)
				if !ok {
					return "-"
				}
				return fmt.Sprintf("%.1f (%.1f)", d.CommitsPerRun, d.IdleCommitsPerSecond)
			})
			row("  "+b+": rows read/run (tup_fetched)", func(c Case) string {
				d, ok := pick(c)
				if !ok {
					return "-"
				}
				return fmt.Sprintf("%.0f (%.0f)", d.RowsReadPerRun, d.TupFetchedPerRun)
			})
			row("  "+b+": PostgreSQL CPU ms/run", func(c Case) string {
				d, ok := pick(c)
				if !ok {
					return "-"
				}
				return num(c.BackendMillisByDatabase[d.Database])
			})
		}
	}
	row("invariants", func(c Case) string {
		failed := 0
		for _, ch := range c.Invariants {
			if !ch.OK {
				failed++
			}
		}
		if c.Passed {
			return fmt.Sprintf("%d passed", len(c.Invariants))
		}
		return fmt.Sprintf("FAILED (%d of %d)", failed, len(c.Invariants))
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cases {
		for _, ch := range c.Invariants {
			if !ch.OK {
				fmt.Fprintf(w, "runs=%d rate=%g: invariant %s FAILED: %s\n", c.Runs, c.Rate, ch.Name, ch.Detail)
			}
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "runs=%d rate=%g: note: %s\n", c.Runs, c.Rate, n)
		}
	}
	for _, f := range r.Flatness {
		verdict := "flat"
		if !f.Flat {
			verdict = "NOT flat"
		}
		fmt.Fprintf(w, "cost per run %d → %d runs (rate %g): CPU ours ×%.2f, PostgreSQL ×%.2f, commits ×%.2f, rows read ×%.2f: %s (within ×%.1f)\n",
			f.FromRuns, f.ToRuns, f.Rate, f.ProcessCPU, f.PostgresCPU, f.Commits, f.RowsRead, verdict, f.FlatThreshold)
	}
	if len(r.Cases) > 0 {
		fmt.Fprintf(w, "statistics: %s\n", r.Cases[0].StatsSource)
		fmt.Fprintf(w, "CPU: %s\n", r.Cases[0].CPU.BackendSource)
	}
	return nil
}
