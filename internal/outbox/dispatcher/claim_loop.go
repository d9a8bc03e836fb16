package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oceanway/core/internal/outbox/transport"
)

// ErrAlreadyRunning is returned by a second Run of one dispatcher.
var ErrAlreadyRunning = errors.New("dispatcher: Run called twice; build a new dispatcher")

// Run claims and delivers until ctx is cancelled, then stops claiming and
// drains the claimed deliveries (in flight and queued) for at most
// DrainTimeout. Deliveries whose outcome could not be recorded, and queued
// ones not started by then, stay leased until their lease expires and
// recovery makes them claimable again: nothing stays leased forever.
//
// Claims are full batches (issue 17): a claim of up to BatchSize rows goes
// into a local queue that Concurrency consumer slots drain, and the next
// claim is made when no more than Concurrency chunks (consumer calls: one
// delivery, or several for a consumer that takes batches) are outstanding
// (queued or in flight), so each claim statement's fixed cost is shared by a
// whole batch instead of the few slots that happen to be free, and slots
// that take batches of deliveries are kept as busy as slots that take one.
// A queued delivery is covered by its lease: a slot renews it (fenced) before
// starting it when it waited longer than RenewInterval, and leaves it to
// recovery when its fence was lost or its lease may end before the call's
// first renewal (see startable). With renewal disabled nothing is queued:
// claims are as large as the free slots.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	d.metrics.Info.WithLabelValues(d.cfg.Version, d.cfg.Region).Set(1)
	// Deliveries outlive ctx during the drain; they are cancelled only when
	// the drain deadline passes.
	deliverCtx, cancelDeliveries := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelDeliveries()

	if !d.cfg.DisableListen {
		listenerDone := make(chan struct{})
		go func() { defer close(listenerDone); d.listen(ctx) }()
		defer func() { <-listenerDone }()
	}
	ackerDone, retrierDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ackerDone)
		recordInBatches(d.acks, d.cfg.AckBatchSize, func(acks []VerifiedAck) []error {
			return d.store.AckBatch(context.Background(), acks)
		})
	}()
	go func() {
		defer close(retrierDone)
		recordInBatches(d.retries, d.cfg.AckBatchSize, func(rs []RetryRequest) []error {
			return d.store.RetryBatch(context.Background(), rs)
		})
	}()
	// The recorders stop after the last outcome has been handed over.
	defer func() { close(d.acks); close(d.retries); <-ackerDone; <-retrierDone }()

	queueCap := d.cfg.Concurrency
	if d.cfg.RenewInterval > 0 {
		queueCap += d.cfg.BatchSize
	}
	// The queue carries chunks: one delivery, or several of one destination
	// whose consumer takes batches (transport.Batcher).
	queue := make(chan []*queued, queueCap)
	waiting := &waitingSet{items: make(map[string]*queued)}
	renewerCtx, stopRenewer := context.WithCancel(context.WithoutCancel(ctx))
	renewerDone := make(chan struct{})
	go func() { defer close(renewerDone); d.renewQueued(renewerCtx, waiting) }()
	defer func() { stopRenewer(); <-renewerDone }()
	// Chunks queued + in flight. Counting calls rather than deliveries keeps
	// every slot fed when a consumer takes batches: a claim of BatchSize
	// cut into chunks of 32 would otherwise occupy 4 of 16 slots and hold
	// the next claim back until 3 of them finished.
	var outstanding atomic.Int64
	var slots sync.WaitGroup
	for range d.cfg.Concurrency {
		slots.Add(1)
		go func() {
			defer slots.Done()
			for chunk := range queue {
				if ready := d.startable(deliverCtx, waiting, chunk); len(ready) > 0 {
					d.process(deliverCtx, ready)
				}
				outstanding.Add(-1)
				d.Wake()
			}
		}()
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	cooldown := time.NewTimer(0)
	defer cooldown.Stop()
	var shortClaimAt time.Time // start of the last claim that came back short

	for {
		select {
		case <-ctx.Done():
			close(queue)
			return d.drain(&slots, cancelDeliveries)
		default:
		}
		if wait := d.cfg.ClaimCooldown - time.Since(shortClaimAt); d.cfg.ClaimCooldown > 0 && wait > 0 {
			cooldown.Reset(wait)
			select {
			case <-ctx.Done():
				continue
			case <-cooldown.C:
			}
		}
		out := int(outstanding.Load())
		want := 0
		if out <= d.cfg.Concurrency {
			want = min(d.cfg.BatchSize, queueCap-out)
		}
		claimed := 0
		if want > 0 {
			if d.hooks.BeforeClaim != nil {
				d.hooks.BeforeClaim()
			}
			claimStart := time.Now()
			// A claim that has begun completes even if a stop lands meanwhile
			// (its statements are bounded by StatementTimeout): its rows are
			// then queued and drained instead of staying leased, undelivered,
			// until their leases expire.
			claims, err := d.round(context.WithoutCancel(ctx), want)
			if len(claims) < want {
				shortClaimAt = claimStart
			}
			claimed = len(claims)
			for _, chunk := range d.chunks(claims) {
				outstanding.Add(1)
				for _, q := range chunk {
					waiting.add(q)
				}
				queue <- chunk // never blocks: a claim of want deliveries is at most want chunks
			}
			if err != nil && ctx.Err() == nil {
				d.log.Warn("claim round failed", "error", err)
				d.metrics.Healthy.WithLabelValues().Set(0)
			} else {
				d.metrics.Healthy.WithLabelValues().Set(1)
			}
		}
		if claimed > 0 && claimed == want {
			continue // more work is likely waiting
		}
		poll.Reset(d.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-poll.C:
		}
	}
}

func (d *Dispatcher) drain(slots *sync.WaitGroup, cancel context.CancelFunc) error {
	done := make(chan struct{})
	go func() { slots.Wait(); d.settlers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(d.cfg.DrainTimeout):
		cancel()
		<-done
		return fmt.Errorf("dispatcher: drain timeout %s exceeded; unfinished attempts recover at lease expiry", d.cfg.DrainTimeout)
	}
}

// round recovers expired leases (at most every RecoverInterval) and claims
// up to n deliveries.
func (d *Dispatcher) round(ctx context.Context, n int) ([]*queued, error) {
	if time.Since(d.recovery.last) >= d.cfg.RecoverInterval {
		if err := d.recover(ctx); err != nil {
			return nil, err
		}
	}
	at := time.Now()
	claims, err := d.store.Claim(ctx, ClaimParams{
		Owner: d.cfg.WorkerID, Destinations: d.cfg.Destinations, Limit: n, Lease: d.cfg.LeaseDuration,
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out := make([]*queued, len(claims))
	for i, c := range claims {
		d.metrics.Claimed.WithLabelValues(string(c.Member.Destination)).Inc()
		out[i] = &queued{c: c, renewed: at}
	}
	return out, nil
}

// chunks groups a claim's deliveries for the consumer slots: consecutive
// deliveries to a destination whose consumer takes batches go together, up
// to its batch limit; every other delivery is a chunk of one. One consumer
// call (and one consumer transaction) then serves a whole chunk, while each
// delivery keeps its own lease and fence.
func (d *Dispatcher) chunks(claims []*queued) [][]*queued {
	batcher, _ := d.transport.(transport.Batcher)
	var out [][]*queued
	for i := 0; i < len(claims); {
		limit := 1
		if batcher != nil {
			limit = max(1, batcher.BatchLimit(claims[i].c.Member.Destination))
		}
		j := i + 1
		for j < len(claims) && j-i < limit && claims[j].c.Member.Destination == claims[i].c.Member.Destination {
			j++
		}
		out = append(out, claims[i:j:j])
		i = j
	}
	return out
}
