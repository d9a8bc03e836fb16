package dispatcher

import (
	"context"
	"fmt"
	"time"
)

// recoveryState bounds the recovery scans of one dispatcher (see recover).
type recoveryState struct {
	last     time.Time  // last scan (local clock, for RecoverInterval)
	lastFull time.Time  // last complete unbounded scan (local clock)
	floor    *time.Time // leases that expired at or before floor (database time) were recovered
}

// recover runs one lease-expiry recovery scan (OB-CLAIM-3). The index it
// walks keeps an entry for every lease that ended (acknowledged, retried,
// quarantined) until vacuum removes it, keyed by the lease's old expiry; an
// unbounded scan therefore reads the whole recent acknowledged history. So
// the scan starts at the floor of the last complete scan: a lease that
// expires later is either still leased (found by a later scan) or was
// written by a claim or renewal after that scan (its expiry is later than
// the floor). The exceptions are a writer whose transaction had the row
// locked during the scan and then rolled back, and clock steps; an
// unbounded scan every FullRecoverInterval catches them, so no expired
// lease waits longer than that beyond its expiry. A scan that stopped at the
// limit does not move the floor.
func (d *Dispatcher) recover(ctx context.Context) error {
	full := d.recovery.floor == nil || time.Since(d.recovery.lastFull) >= d.cfg.FullRecoverInterval
	var since *time.Time
	if !full {
		since = d.recovery.floor
	}
	r, err := d.store.RecoverExpiredSince(ctx, d.cfg.Destinations, d.cfg.BatchSize, since)
	if err != nil {
		return fmt.Errorf("recover expired leases: %w", err)
	}
	d.recovery.last = time.Now()
	for dest, count := range r.Recovered {
		d.metrics.LeaseExpired.WithLabelValues(string(dest)).Add(float64(count))
	}
	if r.Total < d.cfg.BatchSize {
		floor := r.ScannedAt.Add(-d.cfg.RecoverInterval)
		if full || d.recovery.floor == nil || floor.After(*d.recovery.floor) {
			d.recovery.floor = &floor
		}
		if full {
			d.recovery.lastFull = d.recovery.last
		}
	}
	return nil
}
