// Package server wires the long-running machinery of one OceanWay process:
// a connection pool per fact boundary, the consumers reachable through the
// in-process transport or, for consumers in other processes, a remote
// transport (the HTTP transport), and K dispatchers per producer database,
// each claiming only the destinations it can reach. `oceanway serve` (every
// role, or the roles its flags select) and `oceanway demo` both run on it.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Pools holds one pool per fact boundary.
type Pools map[boundary.Boundary]*pgxpool.Pool

// Close closes every pool.
func (p Pools) Close() {
	for _, pool := range p {
		pool.Close()
	}
}

// Boundaries returns the boundaries in a fixed order.
func (p Pools) Boundaries() []boundary.Boundary {
	out := make([]boundary.Boundary, 0, len(p))
	for b := range p {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Config tunes the runtime.
type Config struct {
	// Dispatcher is the configuration every dispatcher starts from; the
	// runtime sets WorkerID and Destinations per instance.
	Dispatcher dispatcher.Config
	// DispatchersPerBoundary is K, the dispatcher instances per producer
	// database. Default 1.
	DispatchersPerBoundary int
	// Remote delivers to the destinations in RemoteDestinations (consumers
	// in other processes, e.g. the HTTP transport). A destination with an
	// in-process consumer is delivered in process.
	Remote             transport.Transport
	RemoteDestinations []route.Destination
	// Batches are the batch entry points of in-process consumers: the
	// dispatchers hand such a destination's deliveries over in chunks of up
	// to Limit, one consumer call (one consumer transaction) per chunk.
	// Destinations without one, or with Limit 1 or less, take single
	// deliveries.
	Batches map[route.Destination]Batch
}

// Batch is a destination's batch entry point (transport.InProcess.WithBatch).
type Batch struct {
	Limit int
	Apply transport.BatchConsumerFunc
}

// Runtime runs dispatchers over every boundary's outbox.
type Runtime struct {
	cfg       Config
	pools     Pools
	consumers map[route.Destination]transport.ConsumerFunc
	transport transport.Transport
	metrics   *dispatcher.Metrics
	log       *slog.Logger
}

// New builds a runtime. consumers are the destinations served in-process;
// deliveries to other destinations are left to the process that serves them.
// Metrics and one open-delivery collector per boundary are registered on reg.
func New(pools Pools, consumers map[route.Destination]transport.ConsumerFunc, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Runtime, error) {
	if len(pools) == 0 {
		return nil, errors.New("server: no boundary databases")
	}
	if cfg.DispatchersPerBoundary == 0 {
		cfg.DispatchersPerBoundary = 1
	}
	if log == nil {
		log = slog.Default()
	}
	dc := cfg.Dispatcher.WithDefaults()
	if err := dc.Validate(); err != nil {
		return nil, err
	}
	if (cfg.Remote == nil) != (len(cfg.RemoteDestinations) == 0) {
		return nil, errors.New("server: a remote transport needs its destinations and the other way round")
	}
	r := &Runtime{
		cfg: cfg, pools: pools, consumers: consumers,
		transport: newRouter(consumers, cfg.Batches, cfg.Remote, cfg.RemoteDestinations),
		metrics:   dispatcher.NewMetrics(reg),
		log:       log,
	}
	served := make([]string, 0, len(route.Destinations))
	for _, d := range r.Served() {
		served = append(served, string(d))
	}
	for _, b := range pools.Boundaries() {
		reg.MustRegister(dispatcher.NewOpenCollector(pools[b], string(b), served, dc.StatementTimeout))
		r.metrics.InitSeries(string(b), served)
	}
	return r, nil
}

// Served lists the destinations this runtime's dispatchers deliver to: those
// with a consumer in this process and those reached through the remote
// transport.
func (r *Runtime) Served() []route.Destination {
	var out []route.Destination
	for _, d := range route.Destinations {
		if _, ok := r.consumers[d]; ok || slices.Contains(r.cfg.RemoteDestinations, d) {
			out = append(out, d)
		}
	}
	return out
}

// router sends a delivery to the in-process consumer of its destination when
// there is one, else to the remote transport.
type router struct {
	local  *transport.InProcess
	has    map[route.Destination]bool
	remote transport.Transport
}

func newRouter(consumers map[route.Destination]transport.ConsumerFunc, batches map[route.Destination]Batch, remote transport.Transport, remoteDests []route.Destination) transport.Transport {
	local := transport.NewInProcess(consumers)
	for d, b := range batches {
		if _, ok := consumers[d]; ok && b.Limit > 1 && b.Apply != nil {
			local.WithBatch(d, b.Limit, b.Apply)
		}
	}
	if remote == nil {
		return local
	}
	has := map[route.Destination]bool{}
	for d := range consumers {
		has[d] = true
	}
	return &router{local: local, has: has, remote: remote}
}

func (t *router) Deliver(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	if t.has[d.Member.Destination] {
		return t.local.Deliver(ctx, d)
	}
	return t.remote.Deliver(ctx, d)
}

// BatchLimit implements transport.Batcher: in-process destinations only.
func (t *router) BatchLimit(dest route.Destination) int {
	if t.has[dest] {
		return t.local.BatchLimit(dest)
	}
	return 1
}

// DeliverBatch implements transport.Batcher.
func (t *router) DeliverBatch(ctx context.Context, ds []transport.Delivery) []transport.Answer {
	local := true
	for _, d := range ds {
		local = local && t.has[d.Member.Destination]
	}
	if local {
		return t.local.DeliverBatch(ctx, ds)
	}
	out := make([]transport.Answer, len(ds))
	for i, d := range ds {
		out[i].Result, out[i].Err = t.Deliver(ctx, d)
	}
	return out
}

// Metrics returns the dispatcher metrics shared by every instance.
func (r *Runtime) Metrics() *dispatcher.Metrics { return r.metrics }

// Transport returns the runtime's transport (in-process, routed to the
// remote transport for remote destinations).
func (r *Runtime) Transport() transport.Transport { return r.transport }

// NewDispatcher builds instance i of boundary b's dispatchers, optionally
// over another transport (the demo's chaos mode wraps the consumers).
func (r *Runtime) NewDispatcher(b boundary.Boundary, i int, t transport.Transport) (*dispatcher.Dispatcher, error) {
	pool, ok := r.pools[b]
	if !ok {
		return nil, fmt.Errorf("server: no pool for boundary %s", b)
	}
	if t == nil {
		t = r.transport
	}
	cfg := r.cfg.Dispatcher
	if cfg.WorkerID == "" {
		cfg = cfg.WithDefaults()
	}
	cfg.WorkerID = fmt.Sprintf("%s/%s/%d", cfg.WorkerID, b, i)
	cfg.Boundary = string(b)
	cfg.Destinations = r.Served()
	return dispatcher.New(pool, t, cfg, r.metrics, r.log) // the dispatcher adds boundary (once)
}

// Run runs K dispatchers per boundary until ctx is cancelled, then drains
// them. It returns the first dispatcher error.
func (r *Runtime) Run(ctx context.Context) error {
	if len(r.Served()) == 0 {
		return errors.New("server: no consumer wired: nothing to dispatch")
	}
	// Build every dispatcher before starting any, so a configuration error
	// never leaves some of them running.
	var dispatchers []*dispatcher.Dispatcher
	for _, b := range r.pools.Boundaries() {
		for i := 0; i < r.cfg.DispatchersPerBoundary; i++ {
			d, err := r.NewDispatcher(b, i, nil)
			if err != nil {
				return err
			}
			dispatchers = append(dispatchers, d)
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, d := range dispatchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Run(ctx); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	r.log.Info("dispatchers running", "boundaries", len(r.pools), "per_boundary", r.cfg.DispatchersPerBoundary,
		"destinations", fmt.Sprint(r.Served()))
	wg.Wait()
	return firstErr
}

// LeaseDuration is the effective lease of the runtime's dispatchers.
func (r *Runtime) LeaseDuration() time.Duration { return r.cfg.Dispatcher.WithDefaults().LeaseDuration }

// DispatchersPerBoundary is K.
func (r *Runtime) DispatchersPerBoundary() int { return r.cfg.DispatchersPerBoundary }
