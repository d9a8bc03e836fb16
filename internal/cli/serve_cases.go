package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/casegateway/casehttp"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/workload"
)

// The reconciliation chain services serve can answer (issue 31): each in
// the core database as its own role.
const (
	caseServiceOperations = "operations"
	caseServiceGrants     = "grants"
	caseServiceBilling    = "billing"
)

var caseServices = []string{caseServiceOperations, caseServiceGrants, caseServiceBilling}

// caseServiceRoles are the database roles of the case services.
var caseServiceRoles = map[string]string{
	caseServiceOperations: operationsschema.RoleOperations,
	caseServiceGrants:     billingschema.RoleGrants,
	caseServiceBilling:    billingschema.RoleBilling,
}

// caseServiceFlags configure serve's reconciliation chain services.
type caseServiceFlags struct {
	serve          []string
	operationsURL  string
	trustIssuers   []string
	grantKey       string
	trustGrantKeys []string
	grantIssuer    string
}

func (f *caseServiceFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.serve, "serve-cases", envList("OCEANWAY_SERVE_CASES", ","),
		"serve these Finalization reconciliation chain services on --consumer-listen: operations (requests, approvals, decisions), grants (Core's grant exchange), billing (resolutions) (env OCEANWAY_SERVE_CASES)")
	fl.StringVar(&f.operationsURL, "cases-operations-url", envOr("OCEANWAY_CASES_OPERATIONS_URL", ""),
		"--serve-cases grants without operations here: Operations' case service, http(s)://host:port, called as --workload "+casehttp.WorkloadGrants)
	fl.StringSliceVar(&f.trustIssuers, "trust-actor-issuer", envList("OCEANWAY_ACTOR_ISSUERS", ";"),
		"a trusted workforce identity provider NAME=PUBKEY (PEM file or text) whose actor assertions authenticate operators; repeatable")
	fl.StringVar(&f.grantKey, "grant-key", envOr("OCEANWAY_GRANT_KEY", ""), "--serve-cases grants: Core's grant signing key (Ed25519 PEM file or text)")
	fl.StringSliceVar(&f.trustGrantKeys, "trust-grant-key", envList("OCEANWAY_TRUSTED_GRANT_KEYS", ";"),
		"--serve-cases billing: Core's grant verification key (PEM file or text); repeatable")
	fl.StringVar(&f.grantIssuer, "grant-issuer", envOr("OCEANWAY_GRANT_ISSUER", "core.grants"), "Core's grant issuer name")
}

func (f *caseServiceFlags) actors() (*grants.AssertionVerifier, error) {
	trusted, err := parseActorIssuers(f.trustIssuers)
	if err != nil {
		return nil, err
	}
	if len(trusted) == 0 {
		return nil, errors.New("--serve-cases operations|grants: --trust-actor-issuer names no identity provider")
	}
	return grants.NewAssertionVerifier(trusted...)
}

// parseActorIssuers reads --trust-actor-issuer NAME=PUBKEY specs (serve and
// oceanway case).
func parseActorIssuers(specs []string) ([]grants.ActorIssuer, error) {
	var trusted []grants.ActorIssuer
	for _, spec := range specs {
		name, key, ok := strings.Cut(spec, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--trust-actor-issuer %q is not NAME=PUBKEY", spec)
		}
		pub, err := workload.LoadPublicKey(key)
		if err != nil {
			return nil, fmt.Errorf("--trust-actor-issuer %s: %w", name, err)
		}
		trusted = append(trusted, grants.ActorIssuer{Issuer: name, Key: pub})
	}
	return trusted, nil
}

// openCasePools opens the core database once per case service, as its role
// (the connecting user without least privilege).
func openCasePools(ctx context.Context, dsn string, services []string, asRoles bool) (map[string]*pgxpool.Pool, error) {
	out := map[string]*pgxpool.Pool{}
	for _, s := range services {
		role := ""
		if asRoles {
			role = caseServiceRoles[s]
		}
		p, err := openRolePools(ctx, map[boundary.Boundary]string{boundary.Core: dsn}, 4, role)
		if err != nil {
			closeCasePools(out)
			return nil, err
		}
		out[s] = p[boundary.Core]
	}
	return out, nil
}

func closeCasePools(pools map[string]*pgxpool.Pool) {
	for _, p := range pools {
		p.Close()
	}
}

// caseHandler serves the plan's case services to the trusted workloads.
func caseHandler(p serveParams, trusted []workload.Trusted) (http.Handler, error) {
	f := p.roles.cases
	verifier := func(aud string) (*workload.Verifier, error) {
		return workload.NewVerifier(workload.VerifierConfig{Audience: aud, Trusted: trusted})
	}
	cfg := casehttp.ServerConfig{Verifiers: map[string]*workload.Verifier{}, Log: p.log}
	serves := func(s string) bool { return slices.Contains(p.plan.serveCases, s) }
	var commands *cases.Commands
	if serves(caseServiceOperations) {
		actors, err := f.actors()
		if err != nil {
			return nil, err
		}
		c := cases.Commands{Pool: p.casePools[caseServiceOperations], Workload: casegateway.Workload}
		commands = &c
		cfg.Operations, cfg.Decisions = casegateway.LocalOperations{Actors: actors, Commands: c}, c
		if cfg.Verifiers[casehttp.AudienceOperations], err = verifier(casehttp.AudienceOperations); err != nil {
			return nil, err
		}
	}
	if serves(caseServiceGrants) {
		actors, err := f.actors()
		if err != nil {
			return nil, err
		}
		if f.grantKey == "" {
			return nil, errors.New("--serve-cases grants: --grant-key (Core's grant signing key) is required")
		}
		key, err := workload.LoadPrivateKey(f.grantKey)
		if err != nil {
			return nil, err
		}
		signer, err := grants.NewSigner(f.grantIssuer, key)
		if err != nil {
			return nil, err
		}
		x := grants.Exchanger{Pool: p.casePools[caseServiceGrants], Signer: signer, Assertions: actors}
		switch {
		case commands != nil:
			x.Decisions = *commands
		case f.operationsURL != "":
			callerSigner, tlsCfg, err := p.roles.caller()
			if err != nil {
				return nil, err
			}
			if callerSigner.Workload() != casehttp.WorkloadGrants {
				return nil, fmt.Errorf("--serve-cases grants calls Operations as workload %s, not %q (--workload)", casehttp.WorkloadGrants, callerSigner.Workload())
			}
			c, err := casehttp.NewClient(f.operationsURL, callerSigner, tlsCfg)
			if err != nil {
				return nil, err
			}
			x.Decisions = c
		default:
			return nil, errors.New("--serve-cases grants: serve operations here too, or give --cases-operations-url")
		}
		cfg.Grants = x
		if cfg.Verifiers[casehttp.AudienceGrants], err = verifier(casehttp.AudienceGrants); err != nil {
			return nil, err
		}
	}
	if serves(caseServiceBilling) {
		var keys []ed25519.PublicKey
		for _, spec := range f.trustGrantKeys {
			k, err := workload.LoadPublicKey(spec)
			if err != nil {
				return nil, fmt.Errorf("--trust-grant-key: %w", err)
			}
			keys = append(keys, k)
		}
		v, err := grants.NewVerifier(f.grantIssuer, keys...)
		if err != nil {
			return nil, fmt.Errorf("--serve-cases billing: %w (give --trust-grant-key)", err)
		}
		cfg.Billing = casegateway.BillingResolutions{Pool: p.casePools[caseServiceBilling], Grants: v}
		if cfg.Verifiers[casehttp.AudienceBilling], err = verifier(casehttp.AudienceBilling); err != nil {
			return nil, err
		}
	}
	return casehttp.Handler(cfg)
}
