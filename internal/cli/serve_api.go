package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/casesapi"
	"github.com/oceanway/core/internal/api/coreapi"
	"github.com/oceanway/core/internal/api/executionapi"
	"github.com/oceanway/core/internal/api/gatewayapi"
	"github.com/oceanway/core/internal/api/meteringapi"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/runtoken"
	"github.com/oceanway/core/internal/workload"
)

// apiFlags are serve's platform API settings.
type apiFlags struct {
	keys          string // a keys directory (oceanway keys generate)
	tokenKey      string // Core's run execution token key (private)
	trustTokenKey string // Core's run execution token key (public), for Execution
	// publicMode is PUBLIC_ADMISSION_MODE: disabled (default) or enabled;
	// publicWorkloads the callers it applies to.
	publicMode      string
	publicWorkloads []string
}

// PUBLIC_ADMISSION_MODE values.
const (
	publicAdmissionDisabled = "disabled"
	publicAdmissionEnabled  = "enabled"
)

func (f *apiFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.keys, "keys", os.Getenv("OCEANWAY_KEYS"),
		"a keys directory (oceanway keys generate --dir D): trust its workloads, sign as owner.<--owner>, and use Core's token key from it, for whichever of those flags is not given (env OCEANWAY_KEYS)")
	fl.StringVar(&f.tokenKey, "token-key", os.Getenv("OCEANWAY_TOKEN_KEY"),
		"Core's run execution token key (Ed25519 PKCS #8 PEM file or text): issueRunExecutionToken signs with it (env OCEANWAY_TOKEN_KEY)")
	fl.StringVar(&f.trustTokenKey, "trust-token-key", os.Getenv("OCEANWAY_TRUST_TOKEN_KEY"),
		"the public half of Core's token key: Execution's openRun accepts only tokens it verifies (default: the public half of --token-key) (env OCEANWAY_TRUST_TOKEN_KEY)")
	fl.StringVar(&f.publicMode, "public-admission-mode", envOr("PUBLIC_ADMISSION_MODE", publicAdmissionDisabled),
		"PUBLIC_ADMISSION_MODE: disabled refuses admitRun from the --public-workload callers (public_admission_disabled); enabled admits them, and serve starts with it only when the core database holds a passed canary proof (oceanway canary) (env PUBLIC_ADMISSION_MODE)")
	fl.StringSliceVar(&f.publicWorkloads, "public-workload", envList("OCEANWAY_PUBLIC_WORKLOADS", ","),
		"a trusted workload that is a public caller of admitRun (PUBLIC_ADMISSION_MODE applies to it; so does every trusted workload named public.*); repeatable (env OCEANWAY_PUBLIC_WORKLOADS)")
}

// publicWorkloadPrefix marks a trusted workload as a public caller of
// admitRun by its name (public.web, say), besides --public-workload.
const publicWorkloadPrefix = "public."

// checkPublicMode refuses a PUBLIC_ADMISSION_MODE that is neither value,
// before serve does anything.
func (f apiFlags) checkPublicMode() error {
	if f.publicMode != publicAdmissionDisabled && f.publicMode != publicAdmissionEnabled {
		return fmt.Errorf("--public-admission-mode (PUBLIC_ADMISSION_MODE) %q: want %s or %s", f.publicMode, publicAdmissionDisabled, publicAdmissionEnabled)
	}
	return nil
}

// requireCanaryProof refuses PUBLIC_ADMISSION_MODE=enabled on a deployment
// whose core database holds no passed canary proof (ADR-031), before any
// worker, dispatcher or listener starts; it returns the proof's ref.
func (f apiFlags) requireCanaryProof(ctx context.Context, core db.Executor) (string, error) {
	if f.publicMode != publicAdmissionEnabled {
		return "", nil
	}
	ref, err := admission.PassedCanaryProof(ctx, core)
	if err != nil {
		return "", err
	}
	if ref == "" {
		return "", errors.New("PUBLIC_ADMISSION_MODE=enabled refused: this deployment has no passed canary proof; run oceanway canary --api URL --keys D against it first (ADR-031)")
	}
	return ref, nil
}

// publicCallers are the trusted workloads that call on behalf of the
// public: every one named public.* and each --public-workload, which must
// be trusted (a typo would leave a caller ungated).
func (f apiFlags) publicCallers(trusted []workload.Trusted) (map[string]bool, error) {
	out, known := map[string]bool{}, map[string]bool{}
	for _, t := range trusted {
		known[t.Workload] = true
		if strings.HasPrefix(t.Workload, publicWorkloadPrefix) {
			out[t.Workload] = true
		}
	}
	for _, w := range f.publicWorkloads {
		if !known[w] {
			return nil, fmt.Errorf("--public-workload %s is not a trusted workload (--trust-workload or --keys)", w)
		}
		out[w] = true
	}
	return out, nil
}

// publicAdmission is the Core API's PUBLIC_ADMISSION_MODE for callers.
func (f apiFlags) publicAdmission(ctx context.Context, core *pgxpool.Pool, callers map[string]bool) (coreapi.PublicAdmission, error) {
	ref, err := f.requireCanaryProof(ctx, core)
	if err != nil {
		return coreapi.PublicAdmission{}, err
	}
	return coreapi.PublicAdmission{Enabled: ref != "", Proof: ref, Callers: callers}, nil
}

// applyKeys fills, from --keys, every key setting not given otherwise.
func (f *apiFlags) applyKeys(roles *roleFlags) error {
	if f.keys == "" {
		return nil
	}
	k := keysDir{dir: f.keys}
	if len(roles.trust) == 0 {
		trust, err := k.trustedWorkloads()
		if err != nil {
			return err
		}
		roles.trust = trust
	}
	if roles.workloadKey == "" && os.Getenv("OCEANWAY_WORKLOAD_KEY") == "" && roles.owner != "" {
		p, err := k.private(ownerhttp.OwnerWorkload(roles.owner))
		if err != nil {
			return err
		}
		roles.workloadKey = p
	}
	var err error
	if f.tokenKey == "" {
		if f.tokenKey, err = k.private(keyCoreToken); err != nil {
			return err
		}
	}
	if f.trustTokenKey == "" {
		if f.trustTokenKey, err = k.public(keyCoreToken); err != nil {
			return err
		}
	}
	return nil
}

// tokenSigner is Core's token signer (nil without --token-key).
func (f apiFlags) tokenSigner() (*runtoken.Signer, error) {
	if f.tokenKey == "" {
		return nil, nil
	}
	key, err := workload.LoadPrivateKey(f.tokenKey)
	if err != nil {
		return nil, fmt.Errorf("--token-key: %w", err)
	}
	return runtoken.NewSigner(key)
}

// tokenVerifier trusts Core's token key (nil with neither key flag).
func (f apiFlags) tokenVerifier() (*runtoken.Verifier, error) {
	switch {
	case f.trustTokenKey != "":
		pub, err := workload.LoadPublicKey(f.trustTokenKey)
		if err != nil {
			return nil, fmt.Errorf("--trust-token-key: %w", err)
		}
		return runtoken.NewVerifier(pub)
	case f.tokenKey != "":
		key, err := workload.LoadPrivateKey(f.tokenKey)
		if err != nil {
			return nil, fmt.Errorf("--token-key: %w", err)
		}
		return runtoken.NewVerifier(key.Public().(ed25519.PublicKey))
	}
	return nil, nil
}

// platformAPI is the platform API (issue 33) of the owners this process
// has, where it trusts callers' workload keys (--trust-workload or
// --keys); nil when it serves none. Each owner needs its own database as
// its role, and:
//   - Core: the billing role too, and Core's token key (--token-key);
//   - Execution: Core's and the Gateway's reads (in process or
//     --owner-url) and Core's token key's public half;
//   - Gateway, Metering: nothing more.
func platformAPI(ctx context.Context, p serveParams) (_ http.Handler, closeAPI func(), err error) {
	var opened []*pgxpool.Pool // the case operations' pools, closed with the API
	closeAPI = func() {
		for _, pool := range opened {
			pool.Close()
		}
	}
	defer func() {
		if err != nil {
			closeAPI()
		}
	}()
	if len(p.roles.trust) == 0 {
		return nil, closeAPI, nil
	}
	trusted, err := p.roles.trusted()
	if err != nil {
		return nil, closeAPI, err
	}
	public, err := p.api.publicCallers(trusted)
	if err != nil {
		return nil, closeAPI, err
	}
	// Public callers may call only admitRun and its reads, at every owner.
	cfg := api.Config{Served: map[api.Owner]api.Served{}, PublicCallers: public, Log: p.log}
	var served, missing []string
	serve := func(o api.Owner, b boundary.Boundary) (api.Served, error) {
		v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.Audience(o), Trusted: trusted})
		if err != nil {
			return api.Served{}, err
		}
		served = append(served, string(o))
		sv := api.Served{Verifier: v}
		if api.KeyTables[o] != "" { // an owner with mutating operations
			sv.Keys = &api.KeyStore{Pool: p.readPools[b], Table: api.KeyTables[o]}
		}
		return sv, nil
	}
	// Core.
	if adm := p.readPools[boundary.Core]; adm != nil && p.billingPool != nil {
		signer, err := p.api.tokenSigner()
		if err != nil {
			return nil, closeAPI, err
		}
		admissionMode, err := p.api.publicAdmission(ctx, adm, public)
		if err != nil {
			return nil, closeAPI, err
		}
		ops := p.consumerPools[boundary.Core] // as oceanway_operations, where core_operations is consumed
		if ops == nil {
			missing = append(missing, "recordCanaryProof (needs the Operations projector here: core_operations consumed in this process)")
		}
		if signer == nil {
			missing = append(missing, "core (needs --token-key or --keys)")
		} else {
			cfg.Core = coreapi.Server{Admission: adm, Billing: p.billingPool, Tokens: signer, Operations: ops, Public: admissionMode}
			if cfg.Served[api.OwnerCore], err = serve(api.OwnerCore, boundary.Core); err != nil {
				return nil, closeAPI, err
			}
		}
	}
	// Execution.
	if pool := p.readPools[boundary.Execution]; pool != nil {
		verifier, err := p.api.tokenVerifier()
		if err != nil {
			return nil, closeAPI, err
		}
		switch {
		case verifier == nil:
			missing = append(missing, "execution (needs --trust-token-key or --keys)")
		case p.reads.manifest == nil || p.reads.gateway == nil:
			missing = append(missing, "execution (needs Core's and the Gateway's reads: --owner-url core=URL, gateway=URL)")
		default:
			cfg.Execution = executionapi.Server{Pool: pool, Core: p.reads.manifest, Gateway: p.reads.gateway, Tokens: verifier}
			if cfg.Served[api.OwnerExecution], err = serve(api.OwnerExecution, boundary.Execution); err != nil {
				return nil, closeAPI, err
			}
		}
	}
	// Gateway.
	if pool := p.readPools[boundary.Gateway]; pool != nil {
		cfg.Gateway = gatewayapi.Server{Pool: pool}
		if cfg.Served[api.OwnerGateway], err = serve(api.OwnerGateway, boundary.Gateway); err != nil {
			return nil, closeAPI, err
		}
	}
	// Operations' case operations: operators with actor assertions, the
	// whole chain in this process on the core database.
	if adm := p.readPools[boundary.Core]; adm != nil && p.billingPool != nil && cfg.Core != nil {
		cases, pools, err := caseOperations(p, adm)
		opened = append(opened, pools...) // closed with the API, or now on an error
		switch {
		case err != nil:
			return nil, closeAPI, err
		case cases == nil:
			missing = append(missing, "operations' case operations (need --trust-actor-issuer and --grant-key, or --keys)")
		default:
			cfg.Cases = cases.server
			served = append(served, string(api.OwnerOperations))
			cfg.Served[api.OwnerOperations] = api.Served{Actors: cases.actors, Keys: &api.KeyStore{Pool: cases.keys, Table: api.KeyTables[api.OwnerOperations]}}
		}
	}
	// Metering: reads only, over its own database as oceanway_metering
	// (its read pool, or the Metering consumer's where it consumes here).
	meteringPool := p.readPools[boundary.Metering]
	if meteringPool == nil {
		meteringPool = p.consumerPools[boundary.Metering]
	}
	if meteringPool != nil {
		cfg.Metering = meteringapi.Server{Pool: meteringPool}
		if cfg.Served[api.OwnerMetering], err = serve(api.OwnerMetering, boundary.Metering); err != nil {
			return nil, closeAPI, err
		}
	}
	if len(served) == 0 {
		if len(missing) > 0 {
			fmt.Fprintf(p.out, "oceanway serve: platform API not served: %s\n", strings.Join(missing, "; "))
		}
		return nil, closeAPI, nil
	}
	note := ""
	if len(missing) > 0 {
		note = "; not served: " + strings.Join(missing, "; ")
	}
	if cfg.Core != nil {
		if pa := cfg.Core.(coreapi.Server).Public; pa.Enabled {
			note += "; PUBLIC_ADMISSION_MODE enabled (canary proof " + pa.Proof + ")"
		} else {
			note += "; PUBLIC_ADMISSION_MODE disabled"
		}
	}
	fmt.Fprintf(p.out, "oceanway serve: platform API on --listen: /v1/ for %s, /openapi.json, /docs%s\n", strings.Join(served, ", "), note)
	h, err := api.Handler(cfg)
	if err != nil {
		return nil, closeAPI, errors.Join(errors.New("platform API"), err)
	}
	return h, closeAPI, nil
}

// caseAPI is Operations' case operations of the API and their
// authenticator and key store.
type caseAPI struct {
	server casesapi.Server
	actors casesapi.Actors
	keys   *pgxpool.Pool
}

// caseOperations builds the operators' case operations on the core
// database (nil without --trust-actor-issuer or a grant key): Operations'
// commands and reads, Core's grant exchange and Billing's resolutions, each
// as its own role, and a pool of its own for the API's keys (the API's
// transaction holds one of its sessions while the commands take others).
func caseOperations(p serveParams, core *pgxpool.Pool) (*caseAPI, []*pgxpool.Pool, error) {
	f := p.roles.cases
	grantKey := f.grantKey
	if grantKey == "" && p.api.keys != "" {
		if k, err := (keysDir{dir: p.api.keys}).private(keyCoreGrant); err == nil {
			grantKey = k
		}
	}
	if len(f.trustIssuers) == 0 || grantKey == "" {
		return nil, nil, nil
	}
	actors, err := f.actors()
	if err != nil {
		return nil, nil, err
	}
	key, err := workload.LoadPrivateKey(grantKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--grant-key: %w", err)
	}
	signer, err := grants.NewSigner(f.grantIssuer, key)
	if err != nil {
		return nil, nil, err
	}
	verifier, err := grants.NewVerifier(f.grantIssuer, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, nil, err
	}
	var pools []*pgxpool.Pool
	open := func(role string) (*pgxpool.Pool, error) {
		pool, err := rolePoolOf(core, role, 4)
		if err == nil {
			pools = append(pools, pool)
		}
		return pool, err
	}
	ops, err := open(operationsschema.RoleOperations)
	if err != nil {
		return nil, pools, err
	}
	grantsPool, err := open(billingschema.RoleGrants)
	if err != nil {
		return nil, pools, err
	}
	keys, err := open(operationsschema.RoleOperations)
	if err != nil {
		return nil, pools, err
	}
	commands := cases.Commands{Pool: ops, Workload: casegateway.Workload}
	gw := casegateway.Gateway{Actors: actors, Operations: casegateway.LocalOperations{Actors: actors, Commands: commands},
		Grants:  grants.Exchanger{Pool: grantsPool, Signer: signer, Assertions: actors, Decisions: commands},
		Billing: casegateway.BillingResolutions{Pool: p.billingPool, Grants: verifier}}
	return &caseAPI{server: casesapi.Server{Operations: ops, Gateway: gw}, actors: casesapi.Actors{Verifier: actors}, keys: keys}, pools, nil
}

// requireCanaryProofAt is requireCanaryProof on one short session of the
// core database (as oceanway_admission with least privilege).
func requireCanaryProofAt(ctx context.Context, dsn string, f apiFlags, asRoles bool) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if asRoles {
		if _, err := conn.Exec(ctx, "SET ROLE "+pgx.Identifier{admissionschema.RoleAdmission}.Sanitize()); err != nil {
			return err
		}
	}
	_, err = f.requireCanaryProof(ctx, conn)
	return err
}
