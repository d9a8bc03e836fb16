package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Processes are the owners running as their own processes (`oceanway demo
// --processes`): each an `oceanway serve --owner` child with only its own
// database, reaching the others over HTTP.
type Processes interface {
	// Run supervises the processes until ctx ends; with chaos it kills one
	// owner process at random now and then and starts it again.
	Run(ctx context.Context, chaos bool) error
	// Report says what ran and what the database saw of each process's
	// connections.
	Report(ctx context.Context) ProcessReport
}

// ProcessReport is the owner processes' part of the summary.
type ProcessReport struct {
	Owners   []string `json:"owners"`
	Kills    int64    `json:"kills"`
	Restarts int64    `json:"restarts"`
	// Samples is how many times pg_stat_activity was read while the
	// processes ran; Connections how many sessions of an owner process
	// were seen in all; Foreign lists every session of an owner process
	// on a database it does not own (empty: isolated).
	Samples     int              `json:"samples"`
	Connections int64            `json:"connections"`
	Sessions    map[string]int64 `json:"sessions"`
	Foreign     []string         `json:"foreign,omitempty"`
	// Supervision lists what went wrong with the processes themselves (an
	// exit, a restart that never became ready); Unexpected counts exits
	// that were not a chaos kill.
	Supervision []string `json:"supervision,omitempty"`
	Unexpected  int64    `json:"unexpectedExits"`
	// Err is a failure to read the proof (then isolation is not proved).
	Err string `json:"error,omitempty"`
	// Processes is what each process finished (several of one owner share
	// its database's Work).
	Processes []ProcessWork `json:"processes"`
}

// ProcessWork is one owner process's finished Work by queue, from its own
// /metrics (since it last started).
type ProcessWork struct {
	Owner    string           `json:"owner"`
	Replica  int              `json:"replica"`
	Finished map[string]int64 `json:"finished"`
	Err      string           `json:"error,omitempty"`
}

// summarizeProcesses records the isolation proof (every owner's processes
// seen connected, never on another owner's database) and the supervision
// (no owner process failed outside chaos).
func (s *Summary) summarizeProcesses(ctx context.Context, p Processes) {
	r := p.Report(ctx)
	s.Processes = &r
	s.OwnerReadsOver = TransportHTTP + " (owner processes)"
	var unseen []string
	for _, o := range r.Owners {
		if r.Sessions[o] == 0 {
			unseen = append(unseen, o)
		}
	}
	detail := fmt.Sprintf("%d samples of pg_stat_activity, %d owner process sessions, all on their own database", r.Samples, r.Connections)
	switch {
	case r.Err != "":
		detail = r.Err
	case len(r.Foreign) > 0:
		detail = "sessions on another owner's database: " + strings.Join(r.Foreign, "; ")
	case len(unseen) > 0:
		detail = "no session of " + strings.Join(unseen, ", ") + " was seen: isolation not proved"
	}
	s.check("owner_processes_isolated", r.Err == "" && r.Samples > 0 && len(unseen) == 0 && len(r.Foreign) == 0, detail)
	supervised := len(r.Supervision) == 0 || (s.Chaos && r.Unexpected == int64(len(r.Supervision)))
	s.check("owner_processes_supervised", supervised, strings.Join(r.Supervision, "; "))
}

func (s *Summary) writeProcesses(row func(string, any)) {
	if s.Processes == nil {
		return
	}
	r := s.Processes
	row("owner processes", fmt.Sprintf("%d `oceanway serve --owner` processes (%s), each with only its own database's DSN", len(r.Processes), strings.Join(r.Owners, ", ")))
	owners := make([]string, 0, len(r.Owners))
	for _, o := range r.Owners {
		owners = append(owners, fmt.Sprintf("%s %d", o, r.Sessions[o]))
	}
	row("owner processes: database sessions", fmt.Sprintf("%d seen in %d samples (%s), %d on a database they do not own",
		r.Connections, r.Samples, strings.Join(owners, ", "), len(r.Foreign)))
	for _, w := range r.Processes {
		if len(w.Finished) == 0 && w.Err == "" {
			continue
		}
		queues := make([]string, 0, len(w.Finished))
		for q, n := range w.Finished {
			queues = append(queues, fmt.Sprintf("%s %d", q, n))
		}
		slices.Sort(queues)
		what := strings.Join(queues, ", ")
		if w.Err != "" {
			what = "not read: " + w.Err
		}
		row(fmt.Sprintf("owner process %s #%d: Work finished", w.Owner, w.Replica), what)
	}
	if s.Chaos {
		row("chaos: owner processes killed/restarted", fmt.Sprintf("%d / %d (%d exited by themselves)", r.Kills, r.Restarts, r.Unexpected))
	}
}
