package dispatcher

import (
	"context"
	"errors"
	"time"
)

// renewQueued renews, every RenewInterval/2, the leases of queued
// deliveries that waited RenewInterval since their lease was set, in one
// round trip per tick, each under its own fence (OB-CLAIM-2): a delivery
// waiting behind slow ones keeps its lease like one in flight.
func (d *Dispatcher) renewQueued(ctx context.Context, waiting *waitingSet) {
	if d.cfg.RenewInterval <= 0 {
		return
	}
	t := time.NewTicker(d.cfg.RenewInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		due := waiting.due(d.cfg.RenewInterval)
		if len(due) == 0 {
			continue
		}
		fences := make([]Fence, len(due))
		for i, q := range due {
			fences[i] = q.c.Fence
		}
		at := time.Now()
		errs := d.renewQueuedFences(ctx, fences)
		waiting.mu.Lock()
		for i, q := range due {
			switch {
			case errs[i] == nil:
				q.renewed = at
				d.metrics.LeaseRenewed.WithLabelValues(string(q.c.Member.Destination)).Inc()
			case errors.Is(errs[i], ErrLeaseLost):
				q.lost = true
			}
		}
		waiting.mu.Unlock()
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrLeaseLost) && ctx.Err() == nil {
				d.log.Warn("renewing queued leases failed", "destination", string(due[i].c.Member.Destination), "error", err)
				break
			}
		}
	}
}

// startable takes a chunk's deliveries out of the waiting set as a slot
// starts it and returns those that may be delivered now (OB-CLAIM-2). The
// members whose lease was set RenewInterval ago or more are renewed first,
// in one round trip, each under its own fence. A member starts only if its
// fence has not been found lost and its lease, as this dispatcher last set
// it, lasts longer than startLease from now, so that the call's first
// renewal (RenewInterval after it starts) lands with room to spare;
// otherwise it stays leased until lease-expiry recovery. A renewal that
// failed for a reason other than its fence (a timeout, a broken connection)
// proves nothing against the lease: such a member still starts while its
// lease lasts that long, instead of waiting out the rest of a lease that is
// still ours. The ack is fenced per row either way.
func (d *Dispatcher) startable(ctx context.Context, waiting *waitingSet, chunk []*queued) []Claimed {
	type member struct {
		c       Claimed
		renewed time.Time
		lost    bool
	}
	ms := make([]member, len(chunk))
	for i, q := range chunk {
		renewed, lost := waiting.take(q)
		ms[i] = member{c: q.c, renewed: renewed, lost: lost}
	}
	if ctx.Err() != nil {
		return nil
	}
	if d.cfg.RenewInterval > 0 {
		var due []int
		var fences []Fence
		for i, m := range ms {
			if age := time.Since(m.renewed); !m.lost && age >= d.cfg.RenewInterval && age < d.cfg.LeaseDuration {
				due, fences = append(due, i), append(fences, m.c.Fence)
			}
		}
		if len(due) > 0 {
			at := time.Now()
			errs := d.renewQueuedFences(context.WithoutCancel(ctx), fences)
			for j, i := range due {
				switch err := errs[j]; {
				case err == nil:
					ms[i].renewed = at
					d.metrics.LeaseRenewed.WithLabelValues(string(ms[i].c.Member.Destination)).Inc()
				case errors.Is(err, ErrLeaseLost):
					ms[i].lost = true
				default:
					d.log.Warn("renewing a queued lease failed", "destination", string(ms[i].c.Member.Destination), "error", err)
				}
			}
		}
	}
	ready := make([]Claimed, 0, len(ms))
	for _, m := range ms {
		left := d.cfg.LeaseDuration - time.Since(m.renewed)
		switch {
		case m.lost || left <= 0:
			d.leaseLost(m.c, "queued")
		case d.cfg.RenewInterval > 0 && left <= startLease(d.cfg.RenewInterval):
			d.log.Warn("a queued lease may end before the call's first renewal; left to recovery",
				"destination", string(m.c.Member.Destination), "lease_left", left)
		default:
			ready = append(ready, m.c)
		}
	}
	return ready
}

// startLease is the least lease a delivery must have left to start: one
// RenewInterval until the call's first renewal, and half of one more for
// that renewal to be scheduled and reach the database. Config.Validate keeps
// every delivery that was not due for renewal above it.
func startLease(renewInterval time.Duration) time.Duration {
	return renewInterval + renewInterval/2
}

// renewQueuedFences renews the leases of queued deliveries, each under its
// own fence: one statement for one delivery or a batch. The answer holds,
// per fence, nil, ErrLeaseLost or the error that stopped the statement.
func (d *Dispatcher) renewQueuedFences(ctx context.Context, fences []Fence) []error {
	var err error
	if d.hooks.BeforeRenew != nil {
		err = d.hooks.BeforeRenew(fences)
	}
	switch {
	case err == nil && len(fences) == 1:
		err = d.store.Renew(ctx, fences[0], d.cfg.LeaseDuration)
	case err == nil:
		return d.store.RenewQueued(ctx, fences, d.cfg.LeaseDuration)
	}
	errs := make([]error, len(fences))
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// renewWhileRunning renews the leases of a consumer call's deliveries
// every RenewInterval while the call runs, in one round trip, each under
// its own fence. A delivery whose fence fails is counted as lost (its late
// ack will be refused by the fence); the call is cancelled once every lease
// it carries is lost (for one delivery: at the first loss). It returns a
// stop function.
func (d *Dispatcher) renewWhileRunning(ctx context.Context, cancel context.CancelFunc, cs []Claimed) func() {
	if d.cfg.RenewInterval <= 0 {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d.cfg.RenewInterval)
		defer t.Stop()
		live := append([]Claimed(nil), cs...)
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fences := make([]Fence, len(live))
			for i, c := range live {
				fences[i] = c.Fence
			}
			errs := d.store.RenewQueued(context.WithoutCancel(ctx), fences, d.cfg.LeaseDuration)
			kept := live[:0]
			for i, c := range live {
				switch {
				case errs[i] == nil:
					d.metrics.LeaseRenewed.WithLabelValues(string(c.Member.Destination)).Inc()
					kept = append(kept, c)
				case errors.Is(errs[i], ErrLeaseLost):
					d.leaseLost(c, "renew")
				default:
					d.log.Warn("lease renewal failed", "destination", string(c.Member.Destination), "error", errs[i])
					kept = append(kept, c)
				}
			}
			if live = kept; len(live) == 0 {
				cancel()
				return
			}
		}
	}()
	return func() { close(stop); <-done }
}
