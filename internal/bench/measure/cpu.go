package measure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat and /proc/stat times.
// It is 100 on every mainstream Linux architecture (getconf CLK_TCK).
const clockTicks = 100

// sampleEvery is the backend CPU sampling interval.
const sampleEvery = 200 * time.Millisecond

// ProcessCPU is the user+system CPU time of this process so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineTicks reads the aggregate cpu line of /proc/stat: busy and total ticks.
func machineTicks() (busy, total uint64, ok bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}

// isBackendOf checks, once per pid, that pid is a PostgreSQL backend of
// database on this machine (its command line names the database).
func isBackendOf(pid int, database string) bool {
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	cmd = bytes.TrimRight(cmd, "\x00 ")
	return bytes.HasPrefix(cmd, []byte("postgres")) &&
		(bytes.Contains(cmd, []byte(" "+database+" ")) || bytes.HasSuffix(cmd, []byte(" "+database)))
}

// procTicks reads utime+stime of pid.
func procTicks(pid int) (uint64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, false
	}
	// After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(fields[11], 10, 64)
	s, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + s, true
}

// backend is one sampled PostgreSQL backend.
type backend struct {
	database string
	verified bool   // a local PostgreSQL backend of database
	baseline uint64 // ticks at the start (0 for a backend born in the window)
	last     uint64 // ticks at the latest sample
	mark     uint64 // ticks at Mark
}

// cpuSampler measures process, backend and machine CPU over a window.
type cpuSampler struct {
	// admin is one session, and a *pgx.Conn runs one statement at a time:
	// a second query while a sample's rows are open fails with "conn busy"
	// and takes over the connection's result reader, which leaves the
	// connection locked for good. Samples run on the sampling goroutine and
	// on the caller's (Start, Mark, Stop), so session serializes them.
	// Drive uses admin itself only before Start and after Stop.
	admin     *pgx.Conn
	session   sync.Mutex
	databases []string
	exclude   func() []int // pids not to count (our own measuring sessions)

	start        time.Time
	startProcess time.Duration
	markProcess  time.Duration
	marked       bool
	startBusy    uint64
	startTotal   uint64
	machineOK    bool

	mu       sync.Mutex
	backends map[int]*backend
	stop     chan struct{}
	done     chan struct{}

	hooks samplerHooks
}

// samplerHooks let a test stop a sample at exact points. Production leaves
// them nil.
type samplerHooks struct {
	// rowsOpen runs while a sample's rows are open: admin is busy reading
	// the answer.
	rowsOpen func()
	// sessionBusy runs when a sample finds admin in use by another sample
	// and is about to wait for it.
	sessionBusy func()
}

func newCPUSampler(admin *pgx.Conn, databases []string, exclude func() []int) *cpuSampler {
	return &cpuSampler{admin: admin, databases: databases, exclude: exclude, backends: map[int]*backend{}}
}

// Start takes the first sample (every backend alive now is a baseline) and
// samples in the background until Stop.
func (s *cpuSampler) Start(ctx context.Context) {
	s.start = time.Now()
	s.startProcess = ProcessCPU()
	s.startBusy, s.startTotal, s.machineOK = machineTicks()
	s.sample(ctx, true)
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample(ctx, false)
			}
		}
	}()
}

// Mark splits the window in two phases (produce, then consume in a
// burn-down): Stop reports the CPU before and after the mark.
func (s *cpuSampler) Mark(ctx context.Context) {
	s.sample(ctx, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markProcess, s.marked = ProcessCPU(), true
	for _, b := range s.backends {
		b.mark = b.last
	}
}

// sample reads the CPU ticks of every backend of the databases. A backend
// first seen after the start counts from zero (it was born in the window).
func (s *cpuSampler) sample(ctx context.Context, initial bool) {
	rs := s.readBackends(ctx)
	skip := map[int]bool{}
	if s.exclude != nil {
		for _, pid := range s.exclude() {
			skip[pid] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		if skip[r.Pid] {
			continue
		}
		b, known := s.backends[r.Pid]
		if !known {
			b = &backend{database: r.DB, verified: isBackendOf(r.Pid, r.DB)}
			s.backends[r.Pid] = b
		}
		if !b.verified {
			continue
		}
		ticks, ok := procTicks(r.Pid)
		if !ok {
			continue
		}
		if !known {
			if initial {
				b.baseline = ticks
			}
			b.mark = b.baseline
		}
		b.last = ticks
	}
}

// backendRow is a row of sql/backends.sql, read by column name.
type backendRow struct {
	Pid int    `db:"pid"`
	DB  string `db:"datname"`
}

// readBackends reads the backends of the databases on admin, one sample at
// a time. A sample that cannot be read is skipped: sampling is best effort.
func (s *cpuSampler) readBackends(ctx context.Context) []backendRow {
	s.takeSession()
	defer s.session.Unlock()
	rows, err := s.admin.Query(ctx, qBackends, pgx.NamedArgs{"databases": s.databases})
	if err != nil {
		return nil
	}
	if s.hooks.rowsOpen != nil {
		s.hooks.rowsOpen()
	}
	rs, _ := pgx.CollectRows(rows, pgx.RowToStructByName[backendRow])
	return rs
}

// takeSession waits until no other sample uses admin. (It tries first so
// that a test sees the wait: hooks.sessionBusy.)
func (s *cpuSampler) takeSession() {
	if s.session.TryLock() {
		return
	}
	if s.hooks.sessionBusy != nil {
		s.hooks.sessionBusy()
	}
	s.session.Lock()
}

// Stop takes the last sample and returns the CPU of the window.
func (s *cpuSampler) Stop(ctx context.Context, messages int) CPU {
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	s.sample(ctx, false)
	elapsed := time.Since(s.start).Seconds()
	now := ProcessCPU()
	out := CPU{ProcessSeconds: round3((now - s.startProcess).Seconds()), MeasurementSeconds: round3(elapsed)}
	s.mu.Lock()
	var ticks, beforeMark uint64
	byDB := map[string]uint64{}
	verified := 0
	for _, b := range s.backends {
		if !b.verified {
			continue
		}
		verified++
		if b.last > b.baseline {
			ticks += b.last - b.baseline
			byDB[b.database] += b.last - b.baseline
		}
		if b.mark > b.baseline {
			beforeMark += b.mark - b.baseline
		}
	}
	out.Backends = len(s.backends)
	switch {
	case len(s.backends) == 0:
		out.BackendSource = "unavailable: no backend of the run's databases was seen"
	case verified == 0:
		out.BackendSource = "unavailable: the server's backends are not readable in this machine's /proc"
	default:
		out.BackendSeconds = round3(float64(ticks) / clockTicks)
		out.BackendSource = fmt.Sprintf("/proc/<pid>/stat utime+stime of %d backend(s) of the run's databases, sampled every %s", verified, sampleEvery)
		out.BackendByDatabase = map[string]float64{}
		for db, t := range byDB {
			out.BackendByDatabase[db] = round3(float64(t) / clockTicks)
		}
	}
	if s.marked {
		out.Phases = &CPUPhases{
			ProduceProcessSeconds: round3((s.markProcess - s.startProcess).Seconds()),
			ProduceBackendSeconds: round3(float64(beforeMark) / clockTicks),
		}
		out.Phases.ConsumeProcessSeconds = round3(out.ProcessSeconds - out.Phases.ProduceProcessSeconds)
		out.Phases.ConsumeBackendSeconds = round3(out.BackendSeconds - out.Phases.ProduceBackendSeconds)
	}
	s.mu.Unlock()
	if messages > 0 {
		out.ProcessPer1k = round3(out.ProcessSeconds * 1000 / float64(messages))
		out.BackendPer1k = round3(out.BackendSeconds * 1000 / float64(messages))
	}
	if elapsed > 0 {
		out.ProcessCoresInUse = round3(out.ProcessSeconds / elapsed)
		out.BackendCoresInUse = round3(out.BackendSeconds / elapsed)
	}
	if busy, total, ok := machineTicks(); ok && s.machineOK && total > s.startTotal {
		out.MachineBusy = round3(float64(busy-s.startBusy) / float64(total-s.startTotal))
		out.MachineBusySource = "/proc/stat, all processes (other work on the machine included)"
	} else {
		out.MachineBusySource = "unavailable"
	}
	return out
}
