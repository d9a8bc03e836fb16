package measure

import (
	"fmt"
	"slices"
	"strings"
)

// runKey identifies the same measurement across repeats.
func runKey(r Run) string { return fmt.Sprint(r.System, "|", r.Variant, "|", r.TxSize) }

// MedianRuns folds repeated measurements into one run per (system, variant,
// tx size), in first-seen order: the run whose consumed/s is the median of
// the group (the lower middle for an even count) stands for the group, so
// every number of a row comes from one and the same run; a note lists the
// consumed/s of every repeat.
func MedianRuns(repeats [][]Run) []Run {
	var order []string
	groups := map[string][]Run{}
	for _, runs := range repeats {
		for _, r := range runs {
			k := runKey(r)
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		}
	}
	out := make([]Run, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if len(g) == 1 {
			out = append(out, g[0])
			continue
		}
		rates := make([]string, len(g))
		for i, r := range g {
			rates[i] = num(r.ConsumedPerSec)
		}
		sorted := slices.Clone(g)
		slices.SortFunc(sorted, func(a, b Run) int {
			switch {
			case a.ConsumedPerSec < b.ConsumedPerSec:
				return -1
			case a.ConsumedPerSec > b.ConsumedPerSec:
				return 1
			}
			return 0
		})
		m := sorted[(len(sorted)-1)/2]
		m.Notes = append(slices.Clone(m.Notes), fmt.Sprintf("median of %d repeats by consumed/s; consumed/s per repeat: %s", len(g), strings.Join(rates, ", ")))
		out = append(out, m)
	}
	return out
}

// MedianLimit picks the limit measurement with the median single-row
// commits/s; nil when there is none.
func MedianLimit(ls []Limit) *Limit {
	if len(ls) == 0 {
		return nil
	}
	sorted := slices.Clone(ls)
	slices.SortFunc(sorted, func(a, b Limit) int {
		switch {
		case a.SingleRowCommitsSec < b.SingleRowCommitsSec:
			return -1
		case a.SingleRowCommitsSec > b.SingleRowCommitsSec:
			return 1
		}
		return 0
	})
	m := sorted[(len(sorted)-1)/2]
	return &m
}
