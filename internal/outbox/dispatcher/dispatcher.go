package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Dispatcher is the long-running delivery loop of one producer database.
type Dispatcher struct {
	cfg       Config
	store     *Store
	pool      *pgxpool.Pool
	transport transport.Transport
	metrics   *Metrics
	log       *slog.Logger
	hooks     Hooks

	wake chan struct{}
	acks chan outcomeRequest[VerifiedAck]
	// retries carries retryable outcomes to the retrier, which records them
	// set-based in batches like the acks.
	retries chan outcomeRequest[RetryRequest]
	// settling bounds the outcomes being recorded after their slot moved
	// on (Concurrency+AckBatchSize of them); settlers counts them for the
	// drain.
	settling chan struct{}
	settlers sync.WaitGroup
	running  atomic.Bool
	recovery recoveryState // touched by the Run goroutine only
}

// recoveryState bounds the recovery scans of one dispatcher (see recover).
type recoveryState struct {
	last     time.Time  // last scan (local clock, for RecoverInterval)
	lastFull time.Time  // last complete unbounded scan (local clock)
	floor    *time.Time // leases that expired at or before floor (database time) were recovered
}

// ErrAlreadyRunning is returned by a second Run of one dispatcher.
var ErrAlreadyRunning = errors.New("dispatcher: Run called twice; build a new dispatcher")

// outcomeRequest asks a batch recorder (acks, retries) to record one
// outcome and report back.
type outcomeRequest[T any] struct {
	outcome T
	done    chan error
}

// Hooks let tests stop a worker at exact points. Production leaves them nil.
type Hooks struct {
	// AfterDeliver runs after the consumer returned and before the outcome
	// is recorded. Returning ErrSimulatedCrash drops the outcome as if the
	// process had died at that point.
	AfterDeliver func(c Claimed) error
	// BeforeDeliver runs after the claim committed and before the consumer
	// is called; ErrSimulatedCrash drops the attempt as if the process died.
	BeforeDeliver func(c Claimed) error
	// Listening runs once LISTEN is established (tests wait for it before
	// relying on notifications).
	Listening func()
	// BeforeClaim runs on the claim loop right before each claim statement
	// (tests read the loop's own claim times).
	BeforeClaim func()
	// BeforeRenew runs before each renewal statement of queued deliveries
	// (the renewer's batch, or one delivery as its consumer call starts); a
	// non-nil error stands in for a statement that failed for a reason other
	// than the fences (a timeout, a broken connection).
	BeforeRenew func(fences []Fence) error
}

// ErrSimulatedCrash is returned by test hooks to abandon an attempt.
var ErrSimulatedCrash = errors.New("dispatcher: simulated crash")

// New builds a dispatcher over a producer database pool.
func New(pool *pgxpool.Pool, t transport.Transport, cfg Config, metrics *Metrics, log *slog.Logger) (*Dispatcher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	if metrics == nil {
		metrics = NewMetrics(prometheus.NewRegistry()) // unexported: counts nobody reads
	}
	return &Dispatcher{
		cfg:       cfg,
		store:     NewStore(pool, cfg.StatementTimeout),
		pool:      pool,
		transport: t,
		metrics:   metrics.forBoundary(cfg.Boundary),
		log:       log.With("component", "dispatcher", "worker", cfg.WorkerID, "boundary", cfg.Boundary),
		wake:      make(chan struct{}, 1),
		acks:      make(chan outcomeRequest[VerifiedAck], cfg.Concurrency+cfg.AckBatchSize),
		retries:   make(chan outcomeRequest[RetryRequest], cfg.Concurrency+cfg.AckBatchSize),
		settling:  make(chan struct{}, cfg.Concurrency+cfg.AckBatchSize),
	}, nil
}

// SetHooks installs test hooks; call before Run.
func (d *Dispatcher) SetHooks(h Hooks) { d.hooks = h }

// Wake asks the loop to claim now (used by LISTEN and by tests).
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

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
	d.metrics.Info.WithLabelValues(d.cfg.Version).Set(1)
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

// process delivers claimed attempts of one destination in one consumer
// call — one delivery through Transport.Deliver, a chunk through
// transport.Batcher — and records each outcome on its own: a chunk shares
// the call, never a fence.
func (d *Dispatcher) process(ctx context.Context, cs []Claimed) {
	started := cs[:0:0]
	for _, c := range cs {
		if d.hooks.BeforeDeliver != nil && errors.Is(d.hooks.BeforeDeliver(c), ErrSimulatedCrash) {
			continue
		}
		started = append(started, c)
	}
	if len(started) == 0 {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, d.cfg.DeliveryTimeout)
	defer cancel()
	stopRenew := d.renewWhileRunning(callCtx, cancel, started)
	start := time.Now()
	answers := d.deliver(callCtx, started)
	stopRenew()
	took := time.Since(start).Seconds()
	d.metrics.ConsumerBatch.WithLabelValues(string(started[0].Member.Destination)).Observe(float64(len(started)))
	for i, c := range started {
		res, err := answers[i].Unpack()
		result := "ok"
		if err != nil {
			result = "error"
		}
		d.metrics.DeliverySecs.WithLabelValues(string(c.Member.Destination), result).Observe(took)
		d.handOver(ctx, c, res, err)
	}
}

// deliver makes the consumer call of process and returns one answer per
// claim. Only a transport.Batcher gets several claims at once (chunks
// builds larger chunks for nothing else); a batcher that answers a
// different number of deliveries is not trusted for any of them.
func (d *Dispatcher) deliver(ctx context.Context, cs []Claimed) []transport.Answer {
	batcher, ok := d.transport.(transport.Batcher)
	if len(cs) == 1 || !ok {
		out := make([]transport.Answer, len(cs))
		for i, c := range cs {
			out[i].Result, out[i].Err = d.transport.Deliver(ctx, c.Delivery())
		}
		return out
	}
	ds := make([]transport.Delivery, len(cs))
	for i, c := range cs {
		ds[i] = c.Delivery()
	}
	answers := batcher.DeliverBatch(ctx, ds)
	if len(answers) == len(cs) {
		return answers
	}
	err := transport.Retryable(transport.CodeBatchAnswers, fmt.Errorf("%w: %d answers for %d deliveries", transport.ErrBatchAnswers, len(answers), len(cs)))
	answers = make([]transport.Answer, len(cs))
	for i := range answers {
		answers[i].Err = err
	}
	return answers
}

// handOver records a consumer call's outcome for one delivery. Outcomes are
// recorded even when ctx is being drained, and after the slot has moved on
// to its next delivery: the consumer call is what Concurrency bounds, and
// waiting for the ack batch's commit would leave the slot idle for a round
// of the acker. At most Concurrency+AckBatchSize outcomes are being
// recorded at once (a slot waits for room); every one stays under its own
// fence and lease, and the drain waits for them.
func (d *Dispatcher) handOver(ctx context.Context, c Claimed, res transport.Result, err error) {
	if d.hooks.AfterDeliver != nil && errors.Is(d.hooks.AfterDeliver(c), ErrSimulatedCrash) {
		return
	}
	d.settling <- struct{}{}
	d.settlers.Add(1)
	go func() {
		defer func() { <-d.settling; d.settlers.Done() }()
		d.settle(context.WithoutCancel(ctx), c, res, err)
	}()
}

// settle verifies and records the outcome of one consumer call: the ack
// (batched, fenced), or a retry or quarantine.
func (d *Dispatcher) settle(recordCtx context.Context, c Claimed, res transport.Result, err error) {
	dest := string(c.Member.Destination)
	if err == nil {
		var v VerifiedAck
		v, err = VerifyResult(c, res)
		if err == nil {
			err = d.recordAckPersistently(recordCtx, v)
		}
		if err == nil {
			d.metrics.Acknowledged.WithLabelValues(dest).Inc()
			d.metrics.AckLatencySecs.WithLabelValues(dest).Observe(time.Since(c.CreatedAt).Seconds())
			return
		}
		if errors.Is(err, ErrLeaseLost) {
			d.leaseLost(c, "ack")
			return
		}
		var rejected *AckRejectedError
		if !errors.As(err, &rejected) {
			d.outcomeRecordFailed(c, "ack", err)
			if !permanentRecordError(err) {
				// Database trouble: leave the attempt to lease-expiry
				// recovery; the consumer's receipt makes the redelivery
				// converge.
				return
			}
			// The database rejected the ack itself (e.g. the published_at
			// function found it invalid): retrying cannot help.
			err = transport.NonRetryable(CodeOutcomeRecordInvalid, err)
		}
	}
	d.fail(recordCtx, c, err)
}

// recordAck hands a verified ack to the acker (batched) or records it in
// its own transaction when batching is off.
func (d *Dispatcher) recordAck(ctx context.Context, v VerifiedAck) error {
	if d.cfg.AckBatchSize == 1 {
		return d.store.AckOne(ctx, v)
	}
	return submit(d.acks, v)
}

// recordRetry hands a retryable outcome to the retrier (batched) or records
// it in its own statement when batching is off.
func (d *Dispatcher) recordRetry(ctx context.Context, r RetryRequest) error {
	if d.cfg.AckBatchSize == 1 {
		return d.store.Retry(ctx, r.Fence, r.Backoff, r.Code)
	}
	return submit(d.retries, r)
}

// submit hands one outcome to a batch recorder and waits for its answer.
func submit[T any](recorder chan<- outcomeRequest[T], outcome T) error {
	req := outcomeRequest[T]{outcome: outcome, done: make(chan error, 1)}
	recorder <- req
	return <-req.done
}

// ackRecordRetries bounds how often a verified ack whose recording failed
// transiently (pool exhausted, statement timeout, connection lost) is
// recorded again before the attempt is left to lease-expiry recovery; each
// try is still fenced, so a try after a lost commit answer is a lease loss,
// never a second acknowledgement.
var ackRecordRetries = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 800 * time.Millisecond}

// recordAckPersistently records a verified ack, retrying transient database
// failures a few times. Whether the lease is still ours is the fence's
// answer (ErrLeaseLost), not a local guess: the claim's expiry is stale once
// the call renewed the lease, and it is in the database's clock.
func (d *Dispatcher) recordAckPersistently(ctx context.Context, v VerifiedAck) error {
	err := d.recordAck(ctx, v)
	for _, pause := range ackRecordRetries {
		if err == nil || errors.Is(err, ErrLeaseLost) || permanentRecordError(err) {
			return err
		}
		d.outcomeRecordFailed(v.claimed, "ack", err)
		time.Sleep(pause)
		err = d.recordAck(ctx, v)
	}
	return err
}

// recordInBatches records outcomes in batches until in is closed: it takes
// whatever requests are waiting (up to limit) and records them with one call
// of record, so the statement and commit cost is shared while every outcome
// stays individually fenced; record answers per outcome.
func recordInBatches[T any](in <-chan outcomeRequest[T], limit int, record func([]T) []error) {
	batch := make([]outcomeRequest[T], 0, limit)
	for first := range in {
		batch = append(batch[:0], first)
	collect:
		for len(batch) < limit {
			select {
			case r, ok := <-in:
				if !ok {
					break collect
				}
				batch = append(batch, r)
			default:
				break collect
			}
		}
		outcomes := make([]T, len(batch))
		for i, r := range batch {
			outcomes[i] = r.outcome
		}
		errs := record(outcomes)
		for i, r := range batch {
			r.done <- errs[i]
		}
	}
}

// fail records a retryable or non-retryable outcome.
func (d *Dispatcher) fail(ctx context.Context, c Claimed, cause error) {
	dest := string(c.Member.Destination)
	retryable, code := transport.RetryableAndCode(cause)
	d.metrics.Failures.WithLabelValues(dest, c.EventType, c.EventSchemaVersion, code).Inc()
	var classified transport.Classified
	if !errors.As(cause, &classified) || code == transport.CodeConsumerPanic {
		// Unclassified errors and panics are retried, and recorded here with
		// their text so they are never swallowed.
		d.log.Warn("unclassified delivery error or consumer panic (retried)", "destination", dest, "event_type", c.EventType,
			"event_id", c.EventID, "attempt", c.AttemptCount, "error", cause.Error())
	}
	wait := transport.IsRecoverableWait(cause)
	unsupported := transport.IsUnsupportedWait(cause)
	if retryable && (wait || d.cfg.MaxAttempts == 0 || c.AttemptCount < d.cfg.MaxAttempts) {
		delay := d.backoff(c.AttemptCount)
		if wait && !unsupported {
			// A data wait ends when the missing fact arrives; poll for it at
			// a bounded pace instead of drifting to BackoffMax. An
			// unsupported pair or a missing consumer ends with a release or
			// a restart: it backs off up to BackoffMax.
			delay = min(delay, d.cfg.WaitBackoffMax)
		}
		err := d.recordRetry(ctx, RetryRequest{Fence: c.Fence, Backoff: delay, Code: code})
		switch {
		case errors.Is(err, ErrLeaseLost):
			d.leaseLost(c, "retry")
		case err != nil:
			d.outcomeRecordFailed(c, "retry", err)
			if permanentRecordError(err) {
				d.quarantine(ctx, c, CodeOutcomeRecordInvalid, err.Error(), false)
			}
		default:
			d.metrics.Retried.WithLabelValues(dest, code).Inc()
			if unsupported {
				d.metrics.UnsupportedWaits.WithLabelValues(dest, code).Inc()
				d.metrics.UnsupportedWaitSecs.WithLabelValues(dest, code).Set(delay.Seconds())
			}
		}
		return
	}
	limitReached := retryable
	if limitReached {
		code = "max_attempts_exceeded"
	}
	d.quarantine(ctx, c, code, cause.Error(), limitReached)
}

// quarantine records the terminal quarantine, its metric and its log line.
func (d *Dispatcher) quarantine(ctx context.Context, c Claimed, code, reason string, limitReached bool) {
	dest := string(c.Member.Destination)
	err := d.store.Quarantine(ctx, c.Fence, code, reason, limitReached)
	switch {
	case errors.Is(err, ErrLeaseLost):
		d.leaseLost(c, "quarantine")
	case err != nil:
		d.outcomeRecordFailed(c, "quarantine", err)
	default:
		d.metrics.Quarantined.WithLabelValues(dest, c.EventType, c.EventSchemaVersion, code).Inc()
		// OBS-3: one structured, low-sensitivity line; the event id is a
		// log field (never a metric label), the reason is the normalized code.
		d.log.Error("delivery quarantined", "destination", dest, "consumer", c.Member.ConsumerName,
			"event_type", c.EventType, "schema_version", c.EventSchemaVersion, "event_id", c.EventID,
			"attempt", c.AttemptCount, "code", code)
	}
}

// CodeOutcomeRecordInvalid quarantines a delivery whose outcome the
// database rejects for a reason retrying cannot change.
const CodeOutcomeRecordInvalid = "outcome_record_invalid"

// permanentRecordError reports whether the database rejected an outcome for
// a reason a retry cannot fix: data exceptions (22), integrity violations
// (23) and the outbox's own OWxxx codes, all about the outcome itself.
// Everything else is transient: connection, transaction-rollback, resource
// and shutdown classes (08, 40, 53, 57), errors without a SQLSTATE, and
// syntax or privilege errors (42: a missing grant, a function not yet
// migrated), which say the deployment is wrong, not the delivery. Those
// must not turn an ack the consumer already applied into a terminal
// quarantine; the attempt goes back through lease-expiry recovery until
// the deployment is fixed.
func permanentRecordError(err error) bool {
	code := db.SQLState(err)
	return pgerrcode.IsDataException(code) || pgerrcode.IsIntegrityConstraintViolation(code) || isOutboxCode(code)
}

// outboxCodeClass is the SQLSTATE class of the outbox's own errors
// (outbox.CodeImmutable and the others, OW001..OW019), raised by its
// triggers and functions.
const outboxCodeClass = "OW"

func isOutboxCode(code string) bool {
	return len(code) == 5 && strings.HasPrefix(code, outboxCodeClass)
}

func (d *Dispatcher) outcomeRecordFailed(c Claimed, outcome string, err error) {
	class := "transient"
	if permanentRecordError(err) {
		class = "permanent"
	}
	d.metrics.OutcomeRecordFailures.WithLabelValues(string(c.Member.Destination), outcome, class).Inc()
	d.log.Warn("recording an outcome failed", "destination", string(c.Member.Destination), "outcome", outcome,
		"class", class, "sqlstate", db.SQLState(err), "event_id", c.EventID, "attempt", c.AttemptCount, "error", err)
}

func (d *Dispatcher) leaseLost(c Claimed, outcome string) {
	d.metrics.LeaseLost.WithLabelValues(string(c.Member.Destination), outcome).Inc()
	d.log.Info("late outcome dropped: lease lost", "destination", string(c.Member.Destination), "outcome", outcome, "attempt", c.AttemptCount)
}

// backoff returns min(max, base·2^(attempt-1)) with ±jitter.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	delay := d.cfg.BackoffBase
	for i := 1; i < attempt && delay < d.cfg.BackoffMax; i++ {
		delay *= 2
	}
	delay = min(delay, d.cfg.BackoffMax)
	if j := d.cfg.BackoffJitter; j > 0 {
		delay = time.Duration(float64(delay) * (1 - j + 2*j*rand.Float64()))
	}
	return delay
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

// listen wakes the loop on NOTIFY from append transactions. On connection
// loss it retries after PollInterval; polling keeps working meanwhile.
func (d *Dispatcher) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := d.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("listen connection lost; polling until it is back", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.cfg.PollInterval):
		}
	}
}

// listenOnce holds a dedicated connection (not one of the pool's, which
// deliveries and acks need) for LISTEN until it fails or ctx ends.
func (d *Dispatcher) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.StatementTimeout)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return err
	}
	if d.hooks.Listening != nil {
		d.hooks.Listening()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if d.wants(route.Destination(n.Payload)) {
			d.Wake()
		}
	}
}

func (d *Dispatcher) wants(dest route.Destination) bool {
	if len(d.cfg.Destinations) == 0 {
		return true
	}
	for _, x := range d.cfg.Destinations {
		if x == dest {
			return true
		}
	}
	return false
}
