package cli

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
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
	"github.com/oceanway/core/internal/workload"
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
	// committed and transition are Billing's reads for the Operations
	// projector (nil: consumersFor answers them from the billing pool).
	committed  coreread.FinalizationCommittedReader
	transition coreread.SettlementTransitionReader
	// caseDecision and caseResolution verify the reconciliation case pairs.
	caseDecision   coreread.FinalizationDecisionForOperationsReader
	caseResolution coreread.ResolutionAppliedForOperationsReader
	// lateExposure verifies the late settlement case pair (issue 32).
	lateExposure coreread.LateExposureCaseRequestReader
	// lateResult and caseResolutionApplied verify the late settlement
	// command's result and applied pairs (issue 32 part 2).
	lateResult            coreread.LateCommandResultReader
	caseResolutionApplied coreread.CaseResolutionAppliedReader
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
	return ownerhttp.Served{Manifest: r.manifest, Execution: r.execution, Gateway: r.gateway, Metering: r.metering,
		FinalizationCommitted: r.committed, SettlementTransition: r.transition, CaseDecision: r.caseDecision, CaseResolution: r.caseResolution,
		LateExposure: r.lateExposure, LateResult: r.lateResult, CaseResolutionApplied: r.caseResolutionApplied}
}

// httpReaders calls each owner's reads through its client.
func httpReaders(clients map[string]*ownerhttp.Client) ownerReaders {
	var r ownerReaders
	if c, ok := clients[ownerhttp.OwnerCore]; ok {
		r.manifest, r.committed, r.transition = c.Core(), c.Core(), c.Core()
		r.caseDecision, r.caseResolution, r.lateExposure = c.Core(), c.Core(), c.Core()
		r.lateResult, r.caseResolutionApplied = c.Core(), c.Core()
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

// over returns r with each owner that o reaches replaced by o's reader.
func (r ownerReaders) over(o ownerReaders) ownerReaders {
	if o.manifest != nil {
		r.manifest = o.manifest
	}
	if o.execution != nil {
		r.execution = o.execution
	}
	if o.gateway != nil {
		r.gateway = o.gateway
	}
	if o.metering != nil {
		r.metering = o.metering
	}
	if o.committed != nil {
		r.committed, r.transition = o.committed, o.transition
		r.caseDecision, r.caseResolution, r.lateExposure = o.caseDecision, o.caseResolution, o.lateExposure
		r.lateResult, r.caseResolutionApplied = o.lateResult, o.caseResolutionApplied
	}
	return r
}

// ownerReadClients are the clients of the owners this process reads in
// other processes (--owner-url), signing as --workload.
func ownerReadClients(roles roleFlags, plan rolePlan, m *ownerhttp.Metrics) (map[string]*ownerhttp.Client, error) {
	signer, tlsCfg, err := roles.caller()
	if err != nil {
		return nil, err
	}
	out := map[string]*ownerhttp.Client{}
	for b, u := range plan.ownerURLs {
		c, err := ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: string(b), BaseURL: u, Signer: signer, TLS: tlsCfg, Metrics: m})
		if err != nil {
			return nil, err
		}
		out[string(b)] = c
	}
	return out, nil
}

// ownerReadHandler answers the reads of the owners this process serves
// (--serve-reads, --owner), each from its own database as its own role,
// to callers holding one of the trusted workload keys.
func ownerReadHandler(p serveParams, trusted []workload.Trusted) (http.Handler, error) {
	var served ownerhttp.Served
	verifiers := map[string]*workload.Verifier{}
	for _, b := range p.plan.serveReads {
		switch b {
		case boundary.Core:
			if p.readPools[b] == nil || p.billingPool == nil {
				return nil, errors.New("--serve-reads core: no core database")
			}
			served.Manifest = admission.Reads{DB: p.readPools[b]}
			served.FinalizationCommitted = billing.Reads{DB: p.billingPool}
			served.SettlementTransition = catchup.Reads{DB: p.billingPool}
			served.CaseDecision = billing.Reads{DB: p.billingPool}
			served.CaseResolution = billing.Reads{DB: p.billingPool}
			served.LateExposure = catchup.Reads{DB: p.billingPool}
			served.LateResult = catchup.Reads{DB: p.billingPool}
			served.CaseResolutionApplied = catchup.Reads{DB: p.billingPool}
		case boundary.Execution:
			served.Execution = execution.Reads{DB: p.readPools[b]}
		case boundary.Gateway:
			served.Gateway = gateway.Reads{DB: p.readPools[b]}
		case boundary.Metering:
			m := p.consumerPools[b]
			if m == nil {
				m = p.readPools[b]
			}
			served.Metering = metering.Reads{DB: m}
		}
		if p.readPools[b] == nil {
			return nil, fmt.Errorf("--serve-reads %s: no %s database", b, b)
		}
		v, err := workload.NewVerifier(workload.VerifierConfig{Audience: ownerhttp.Audience(string(b)), Trusted: trusted})
		if err != nil {
			return nil, err
		}
		verifiers[string(b)] = v
	}
	return ownerhttp.Handler(ownerhttp.ServerConfig{Served: served, Verifiers: verifiers, Log: p.log})
}
