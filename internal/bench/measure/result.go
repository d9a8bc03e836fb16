package measure

import (
	"math"
	"time"
)

// Mode says whether consumers run while messages are produced.
type Mode string

const (
	// Concurrent starts the consumers first, then produces: latency is
	// how far consumption lags behind production under full load.
	Concurrent Mode = "concurrent"
	// BurnDown produces every message first, then starts the consumers
	// and times the drain (River's "burn down" benchmark).
	BurnDown Mode = "burndown"
)

// ParseMode accepts the two mode names.
func ParseMode(s string) (Mode, bool) {
	switch Mode(s) {
	case Concurrent, BurnDown:
		return Mode(s), true
	}
	return "", false
}

// Report is the JSON document `oceanway bench --json` and peerbench write.
type Report struct {
	Tool      string    `json:"tool"`
	Started   time.Time `json:"started"`
	Server    Server    `json:"server"`
	Runs      []Run     `json:"runs"`
	Limit     *Limit    `json:"limit,omitempty"`
	Profile   string    `json:"cpuProfile,omitempty"`
	Databases []string  `json:"keptDatabases,omitempty"`
}

// Server describes the PostgreSQL server and the machine.
type Server struct {
	Source            string `json:"source"` // database_url, local, embedded
	Version           string `json:"version"`
	SynchronousCommit string `json:"synchronousCommit"`
	CPUs              int    `json:"cpus"`
}

// Run is one measured run of one system.
type Run struct {
	System    string `json:"system"`
	Variant   string `json:"variant,omitempty"` // "" or "held-xmin"
	Mode      Mode   `json:"mode"`
	Messages  int    `json:"messages"`
	TxSize    int    `json:"txSize"`
	Producers int    `json:"producers"`
	Workers   int    `json:"workers"` // consumer concurrency (per consumer process)
	Settings  string `json:"settings,omitempty"`
	// RateLimit is the producers' total rate limit in messages/s (0: none).
	RateLimit float64 `json:"rateLimit,omitempty"`
	// MessageBytes is the size of one message's body as stored.
	MessageBytes int `json:"messageBytes"`

	ProduceSeconds float64 `json:"produceSeconds"`
	ConsumeSeconds float64 `json:"consumeSeconds"`
	ProducedPerSec float64 `json:"producedPerSec"`
	ConsumedPerSec float64 `json:"consumedPerSec"`
	Latency        Summary `json:"latencyMs"`
	LatencySource  string  `json:"latencySource"`

	Rows Rows `json:"rows"`
	CPU  CPU  `json:"cpu"`

	QueueTable      string `json:"queueTable"`
	QueueDeadTuples int64  `json:"queueDeadTuples"`
	// QueueDeadAfterVacuum is what a plain VACUUM of the queue table, run
	// right after the run (with the held snapshot still open in the
	// held-xmin variant), could not remove.
	QueueDeadAfterVacuum int64     `json:"queueDeadAfterVacuum"`
	VacuumSeconds        float64   `json:"vacuumSeconds"`
	HeldXmin             *HeldXmin `json:"heldXmin,omitempty"`
	Notes                []string  `json:"notes,omitempty"`
}

// Summary is a latency distribution in milliseconds.
type Summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Rows counts the rows written by a run.
type Rows struct {
	Inserted   int64   `json:"inserted"`
	Updated    int64   `json:"updated"`
	Deleted    int64   `json:"deleted"`
	PerMessage float64 `json:"perMessage"` // (inserted+updated+deleted)/messages
	// ReadPerMessage is (sequential tuples read + index entries read)/messages
	// over the same tables: how much a system scans to find its work.
	ReadPerMessage float64 `json:"tuplesReadPerMessage"`
	// ScansPerMessage is (sequential + index scans)/messages.
	ScansPerMessage float64       `json:"scansPerMessage"`
	Tables          []TableWrites `json:"tables"`
	Source          string        `json:"source"`
}

// TableWrites are one table's counters (deltas over a run, except
// DeadTuples, which is the value at the end).
type TableWrites struct {
	Database   string `json:"database"`
	Table      string `json:"table"`
	Inserted   int64  `json:"inserted"`
	Updated    int64  `json:"updated"`
	HOTUpdated int64  `json:"hotUpdated"`
	Deleted    int64  `json:"deleted"`
	DeadTuples int64  `json:"deadTuples"`
	SeqScans   int64  `json:"seqScans"`
	SeqTupRead int64  `json:"seqTuplesRead"`
	IdxScans   int64  `json:"indexScans"`
	IdxTupRead int64  `json:"indexTuplesRead"` // index entries returned by its index scans
}

// CPU is the CPU spent during a run.
type CPU struct {
	ProcessSeconds     float64 `json:"processSeconds"`
	ProcessPer1k       float64 `json:"processSecondsPer1k"`
	BackendSeconds     float64 `json:"backendSeconds"`
	BackendPer1k       float64 `json:"backendSecondsPer1k"`
	Backends           int     `json:"backends"`
	BackendSource      string  `json:"backendSource"`
	MachineBusy        float64 `json:"machineBusy"` // fraction of all cores busy (any process)
	MachineBusySource  string  `json:"machineBusySource"`
	ProcessCoresInUse  float64 `json:"processCoresInUse"`
	BackendCoresInUse  float64 `json:"backendCoresInUse"`
	MeasurementSeconds float64 `json:"measurementSeconds"`
	// BackendByDatabase splits BackendSeconds by database.
	BackendByDatabase map[string]float64 `json:"backendSecondsByDatabase,omitempty"`
	// Phases splits a burn-down's CPU into producing and consuming.
	Phases *CPUPhases `json:"phases,omitempty"`
}

// CPUPhases is the CPU of a burn-down's two phases.
type CPUPhases struct {
	ProduceProcessSeconds float64 `json:"produceProcessSeconds"`
	ProduceBackendSeconds float64 `json:"produceBackendSeconds"`
	ConsumeProcessSeconds float64 `json:"consumeProcessSeconds"`
	ConsumeBackendSeconds float64 `json:"consumeBackendSeconds"`
}

// HeldXmin describes the snapshot held open during a held-xmin run.
type HeldXmin struct {
	Requested   string  `json:"requested"`
	HeldSeconds float64 `json:"heldSeconds"`
	Database    string  `json:"database"`
}

// Limit is the machine's physical limit at one concurrency.
type Limit struct {
	Concurrency          int     `json:"concurrency"`
	PayloadBytes         int     `json:"payloadBytes"`
	Seconds              float64 `json:"secondsPerTest"`
	SingleRowCommitsSec  float64 `json:"singleRowCommitsPerSec"`
	SingleRowCommitP99Ms float64 `json:"singleRowCommitP99Ms"`
	SingleRowCommitP50Ms float64 `json:"singleRowCommitP50Ms"`
	BatchRows            int     `json:"batchRows"`
	BatchedRowsSec       float64 `json:"batchedRowsPerSec"`
	BatchedCommitP99Ms   float64 `json:"batchedCommitP99Ms"`
}

// Summarize computes the distribution of ds (which it sorts).
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	sortDurations(ds)
	ms := func(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }
	return Summary{
		Count: len(ds),
		P50:   ms(percentile(ds, 0.50)),
		P90:   ms(percentile(ds, 0.90)),
		P99:   ms(percentile(ds, 0.99)),
		Max:   ms(ds[len(ds)-1]),
	}
}

// percentile is the nearest-rank percentile of sorted ds.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// perSec is n/seconds, 0 when seconds is not positive.
func perSec(n int, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return round3(float64(n) / seconds)
}

// Finite reports whether every number of r is finite (no NaN or Inf).
func (r Run) Finite() bool {
	for _, f := range []float64{
		r.ProduceSeconds, r.ConsumeSeconds, r.ProducedPerSec, r.ConsumedPerSec,
		r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.Max, r.Rows.PerMessage,
		r.CPU.ProcessSeconds, r.CPU.ProcessPer1k, r.CPU.BackendSeconds, r.CPU.BackendPer1k, r.CPU.MachineBusy,
	} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}
