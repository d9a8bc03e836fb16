package cli

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/server"
)

// ownerReaders are the owner reads this process's consumers and workers
// call, one Reader per owner (nil: that owner is not reachable here, and
// what needs it does not run). This is the one place the owners meet in
// code: in process each is the owner's own Reads over its own pool; over
// HTTP each is an ownerhttp client of the owner's process.
type ownerReaders struct {
	manifest  coreread.ManifestReader
	execution executionread.Reader
	gateway   gatewayread.Reader
	metering  meteringread.Reader
}

// inProcessReaders answers each owner's reads from its pool in pools, when
// present.
func inProcessReaders(pools server.Pools) ownerReaders {
	var r ownerReaders
	if p, ok := pools[boundary.Core]; ok {
		r.manifest = admission.Reads{DB: p}
	}
	if p, ok := pools[boundary.Execution]; ok {
		r.execution = execution.Reads{DB: p}
	}
	if p, ok := pools[boundary.Gateway]; ok {
		r.gateway = gateway.Reads{DB: p}
	}
	if p, ok := pools[boundary.Metering]; ok {
		r.metering = metering.Reads{DB: p}
	}
	return r
}

// withMetering returns r with Metering's reads over m, the Metering
// consumer's own pool, when this process has it: validateSettlementInputCurrent
// writes its receipt, which the metering consumer role may and a read role
// may not.
func (r ownerReaders) withMetering(m *pgxpool.Pool) ownerReaders {
	if m != nil {
		r.metering = metering.Reads{DB: m}
	}
	return r
}

// served is r as the reads an owner-read endpoint answers.
func (r ownerReaders) served() ownerhttp.Served {
	return ownerhttp.Served{Manifest: r.manifest, Execution: r.execution, Gateway: r.gateway, Metering: r.metering}
}

// httpReaders calls each owner's reads through its client.
func httpReaders(clients map[string]*ownerhttp.Client) ownerReaders {
	var r ownerReaders
	if c, ok := clients[ownerhttp.OwnerCore]; ok {
		r.manifest = c.Core()
	}
	if c, ok := clients[ownerhttp.OwnerExecution]; ok {
		r.execution = c.Execution()
	}
	if c, ok := clients[ownerhttp.OwnerGateway]; ok {
		r.gateway = c.Gateway()
	}
	if c, ok := clients[ownerhttp.OwnerMetering]; ok {
		r.metering = c.Metering()
	}
	return r
}
