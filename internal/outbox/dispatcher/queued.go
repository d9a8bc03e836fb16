package dispatcher

import (
	"sync"
	"time"
)

// queued is a claimed delivery waiting for a consumer slot. renewed is the
// local time its lease was last set (taken before the claim or renewal
// statement, so the lease in database time ends no earlier than
// renewed+LeaseDuration); lost marks a renewal whose fence failed. Both are
// guarded by the waitingSet's mutex.
type queued struct {
	c       Claimed
	renewed time.Time
	lost    bool
}

// waitingSet holds the queued deliveries not yet started, for the renewer.
type waitingSet struct {
	mu    sync.Mutex
	items map[string]*queued // by attempt id
}

func (w *waitingSet) add(q *queued) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items[q.c.AttemptID] = q
}

// take removes q (a slot starts it) and returns its lease state.
func (w *waitingSet) take(q *queued) (renewed time.Time, lost bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.items, q.c.AttemptID)
	return q.renewed, q.lost
}

// due returns the waiting deliveries whose lease was set at least age ago.
func (w *waitingSet) due(age time.Duration) []*queued {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*queued
	for _, q := range w.items {
		if time.Since(q.renewed) >= age {
			out = append(out, q)
		}
	}
	return out
}
