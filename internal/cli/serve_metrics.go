package cli

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/outbox/transport"
)

// ownerScrapeTimeout bounds one owner's scrape-time reads.
const ownerScrapeTimeout = 5 * time.Second

// instrumentConsumers times every consumer where it applies (OBS-1:
// consumer apply latency), whether the dispatcher calls it in process or
// through this process's consumer endpoint.
func instrumentConsumers(m *inbox.ApplyMetrics, consumers map[route.Destination]transport.ConsumerFunc,
	batches map[route.Destination]transport.BatchConsumerFunc,
) (map[route.Destination]transport.ConsumerFunc, map[route.Destination]transport.BatchConsumerFunc) {
	outC := make(map[route.Destination]transport.ConsumerFunc, len(consumers))
	for d, c := range consumers {
		outC[d] = m.Consumer(d, c)
	}
	outB := make(map[route.Destination]transport.BatchConsumerFunc, len(batches))
	for d, b := range batches {
		outB[d] = m.Batch(d, b)
	}
	return outC, outB
}

// registerOwnerCollectors exports each owner's open state (OBS-1) from the
// owner database this process already holds, as the owner's own role: Billing
// where the coordinator runs (the core database as oceanway_billing),
// Metering where its input processor or reads are, Execution and Gateway
// where their reads are. A split deployment exports each owner from the
// processes that hold its database (the series differ by instance).
func registerOwnerCollectors(reg prometheus.Registerer, p serveParams) {
	if p.billingPool != nil && p.coordinator {
		reg.MustRegister(billing.NewCollector(p.billingPool, ownerScrapeTimeout))
	}
	if pool := ownerPool(boundary.Metering, p.consumerPools, p.readPools); pool != nil {
		reg.MustRegister(metering.NewCollector(pool, ownerScrapeTimeout))
	}
	if pool := ownerPool(boundary.Execution, p.readPools, p.consumerPools); pool != nil {
		reg.MustRegister(execution.NewCollector(pool, ownerScrapeTimeout))
	}
	if pool := ownerPool(boundary.Gateway, p.readPools, p.consumerPools); pool != nil {
		reg.MustRegister(gateway.NewCollector(pool, ownerScrapeTimeout))
	}
}

// ownerPool is the owner's database from the first set that holds it.
func ownerPool(b boundary.Boundary, sets ...map[boundary.Boundary]*pgxpool.Pool) *pgxpool.Pool {
	for _, s := range sets {
		if pool, ok := s[b]; ok {
			return pool
		}
	}
	return nil
}
