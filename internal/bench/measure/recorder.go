package measure

import (
	"slices"
	"sync"
	"time"
)

// Recorder keeps the commit time of every produced message and the time
// its consumption became durable, keyed by the message id the system uses.
// It is safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	committed map[string]time.Time
	consumed  map[string]time.Time
	dups      int
}

// NewRecorder sizes a recorder for n messages.
func NewRecorder(n int) *Recorder {
	return &Recorder{committed: make(map[string]time.Time, n), consumed: make(map[string]time.Time, n)}
}

// Committed stamps ids as committed at t.
func (r *Recorder) Committed(ids []string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.committed[id] = t
	}
}

// Consumed stamps id as durably consumed at t. A second consumption of the
// same id is counted as a duplicate and keeps the first time.
func (r *Recorder) Consumed(id string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.consumed[id]; ok {
		r.dups++
		return
	}
	r.consumed[id] = t
}

// ConsumedCount is the number of distinct ids consumed so far.
func (r *Recorder) ConsumedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.consumed)
}

// Duplicates is the number of second (or later) consumptions.
func (r *Recorder) Duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dups
}

// Latencies returns consumed − committed for every id that has both. An
// id consumed before its commit was stamped (possible when the consumer
// is faster than the producer's return from Commit) counts as 0.
func (r *Recorder) Latencies() (ds []time.Duration, missing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ds = make([]time.Duration, 0, len(r.consumed))
	for id, c := range r.committed {
		at, ok := r.consumed[id]
		if !ok {
			missing++
			continue
		}
		ds = append(ds, max(0, at.Sub(c)))
	}
	return ds, missing
}

func sortDurations(ds []time.Duration) { slices.Sort(ds) }
