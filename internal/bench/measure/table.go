package measure

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// TableOpts choose the comparison columns of WriteTable.
type TableOpts struct {
	// Ours names the system the "vs ours" column divides by (matched per
	// tx size and variant); empty leaves the column out.
	Ours string
	// Reference names a peer whose throughput a "vs <name>" column divides
	// by in the same way (a bar stated against a peer, e.g. River, is then
	// read off the same run); empty, or a system not run, leaves it out.
	Reference string
	// Limit adds the "vs limit" columns and the limit rows.
	Limit *Limit
}

// WriteTable prints one row per run: system, tx size, throughput
// (consumed/s), produced/s, p50/p99 latency, rows written per message, CPU
// per 1,000 messages (client process and PostgreSQL backends), tuples read
// per message (sequential + index scans over the run's tables), dead tuples
// of the queue table at the end; with opts, the ratio of throughput to
// ours and to the reference peer at the same tx size and variant, and to
// the physical limit (single-row commits/s for every row, batched rows/s
// for every row).
func WriteTable(w io.Writer, runs []Run, opts TableOpts) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"system", "tx", "consumed/s", "produced/s", "p50 ms", "p99 ms", "rows/msg", "read/msg", "cpu s/1k", "pg cpu s/1k", "dead tup"}
	ours, reference := throughputOf(runs, opts.Ours), throughputOf(runs, opts.Reference)
	if opts.Ours != "" {
		head = append(head, "vs ours")
	}
	if reference != nil {
		head = append(head, "vs "+opts.Reference)
	}
	if opts.Limit != nil {
		head = append(head, "vs commit limit", "vs row limit")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range runs {
		name := r.System
		if r.Variant != "" {
			name += " [" + r.Variant + "]"
		}
		if r.RateLimit > 0 {
			name += fmt.Sprintf(" [rate %g/s]", r.RateLimit)
		}
		cells := []string{name, fmt.Sprint(r.TxSize), num(r.ConsumedPerSec), num(r.ProducedPerSec),
			num(r.Latency.P50), num(r.Latency.P99), fmt.Sprintf("%.2f", r.Rows.PerMessage), num(r.Rows.ReadPerMessage),
			fmt.Sprintf("%.3f", r.CPU.ProcessPer1k), backendCPU(r.CPU), fmt.Sprint(r.QueueDeadTuples)}
		if opts.Ours != "" {
			cells = append(cells, ratio(r.ConsumedPerSec, ours[fmt.Sprint(r.TxSize, r.Variant)]))
		}
		if reference != nil {
			cells = append(cells, ratio(r.ConsumedPerSec, reference[fmt.Sprint(r.TxSize, r.Variant)]))
		}
		if opts.Limit != nil {
			cells = append(cells, ratio(r.ConsumedPerSec, opts.Limit.SingleRowCommitsSec), ratio(r.ConsumedPerSec, opts.Limit.BatchedRowsSec))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if l := opts.Limit; l != nil {
		for _, row := range []struct {
			name string
			tx   int
			rate float64
			p99  float64
		}{
			{"limit: single-row INSERT commits", 1, l.SingleRowCommitsSec, l.SingleRowCommitP99Ms},
			{fmt.Sprintf("limit: batched INSERT rows (%d/tx)", l.BatchRows), l.BatchRows, l.BatchedRowsSec, l.BatchedCommitP99Ms},
		} {
			cells := []string{row.name, fmt.Sprint(row.tx), num(row.rate), "-", "-", num(row.p99), "1.00", "-", "-", "-", "-"}
			if opts.Ours != "" {
				cells = append(cells, "-")
			}
			if reference != nil {
				cells = append(cells, "-")
			}
			cells = append(cells, ratio(row.rate, l.SingleRowCommitsSec), ratio(row.rate, l.BatchedRowsSec))
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
	}
	return tw.Flush()
}

// throughputOf maps "tx size, variant" to the named system's consumed/s;
// nil when the name is empty or no run has it.
func throughputOf(runs []Run, system string) map[string]float64 {
	var out map[string]float64
	for _, r := range runs {
		if system != "" && r.System == system {
			if out == nil {
				out = map[string]float64{}
			}
			out[fmt.Sprint(r.TxSize, r.Variant)] = r.ConsumedPerSec
		}
	}
	return out
}

func num(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func backendCPU(c CPU) string {
	if c.BackendSeconds == 0 && !strings.HasPrefix(c.BackendSource, "/proc") {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", c.BackendPer1k)
}

// WriteHeldXmin prints, for every held-xmin run, the same system's run at
// the same tx size without the snapshot: throughput with and without, the
// change, and the dead tuples of the queue table at the end of each.
func WriteHeldXmin(w io.Writer, runs []Run) error {
	base := map[string]Run{}
	for _, r := range runs {
		if r.Variant == "" {
			base[fmt.Sprint(r.System, "|", r.TxSize)] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "held xmin: system\ttx\tsnapshot held s\tconsumed/s without\twith\tchange\tp99 ms without\twith\tqueue dead tuples without\twith\tleft by VACUUM without\twith\t")
	found := false
	for _, r := range runs {
		if r.Variant != "held-xmin" || r.HeldXmin == nil {
			continue
		}
		b, ok := base[fmt.Sprint(r.System, "|", r.TxSize)]
		if !ok {
			continue
		}
		found = true
		change := "-"
		if b.ConsumedPerSec > 0 {
			change = fmt.Sprintf("%+.0f%%", (r.ConsumedPerSec/b.ConsumedPerSec-1)*100)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t\n", r.System, r.TxSize, r.HeldXmin.HeldSeconds,
			num(b.ConsumedPerSec), num(r.ConsumedPerSec), change, num(b.Latency.P99), num(r.Latency.P99),
			b.QueueDeadTuples, r.QueueDeadTuples, b.QueueDeadAfterVacuum, r.QueueDeadAfterVacuum)
	}
	if !found {
		return nil
	}
	return tw.Flush()
}
