package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/workload"
)

// roleFlags select what one `oceanway serve` process runs (issue 21). With
// none of --dispatch, --consume, --consumer-url the process runs everything
// in one place, as before: every boundary's dispatchers and every built
// consumer in process.
type roleFlags struct {
	dispatch       []string // producer boundaries whose dispatchers run here
	consume        []string // destinations whose consumer endpoint runs here
	consumerURLs   []string // destination=URL of remote consumer endpoints
	consumerListen string
	tlsCert        string
	tlsKey         string
	tlsCA          string
	workloadName   string
	workloadKey    string
	trust          []string // workload=key (PEM path or text)
	owner          string   // one owner per process: a preset of the flags above
	serveReads     []string // owners whose directed reads this process serves
	ownerURLs      []string // owner=URL of owner read endpoints elsewhere
	cases          caseServiceFlags
}

func (f *roleFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.dispatch, "dispatch", envList("OCEANWAY_DISPATCH", ","),
		"run the dispatchers of these producer databases: core, execution, gateway, metering or all (env OCEANWAY_DISPATCH)")
	fl.StringSliceVar(&f.consume, "consume", envList("OCEANWAY_CONSUME", ","),
		"serve these consumers as HTTP endpoints, by destination: core_operations, metering_input_processor, billing_finalization_coordinator, billing_settlement_catch_up (env OCEANWAY_CONSUME)")
	fl.StringSliceVar(&f.consumerURLs, "consumer-url", envList("OCEANWAY_CONSUMER_URLS", ","),
		"deliver to a consumer endpoint in another process: destination=http(s)://host:port (env OCEANWAY_CONSUMER_URLS)")
	fl.StringVar(&f.consumerListen, "consumer-listen", envOr("OCEANWAY_CONSUMER_LISTEN", "127.0.0.1:8090"),
		"listen address of the consumer endpoints (env OCEANWAY_CONSUMER_LISTEN)")
	fl.StringVar(&f.tlsCert, "tls-cert", os.Getenv("OCEANWAY_TLS_CERT"), "certificate (PEM file) of the consumer endpoints; with --tls-key they serve HTTPS (env OCEANWAY_TLS_CERT)")
	fl.StringVar(&f.tlsKey, "tls-key", os.Getenv("OCEANWAY_TLS_KEY"), "private key (PEM file) of --tls-cert (env OCEANWAY_TLS_KEY)")
	fl.StringVar(&f.tlsCA, "tls-ca", os.Getenv("OCEANWAY_TLS_CA"), "CA certificates (PEM file) trusted for https consumer URLs (default: system roots) (env OCEANWAY_TLS_CA)")
	fl.StringVar(&f.workloadName, "workload", envOr("OCEANWAY_WORKLOAD", defaultWorkload),
		"workload name this process signs its calls as (default owner.<owner> with --owner, else "+defaultWorkload+") (env OCEANWAY_WORKLOAD)")
	fl.StringVar(&f.workloadKey, "workload-key", "", "Ed25519 private key (PKCS #8 PEM file) signing this process's calls (default $OCEANWAY_WORKLOAD_KEY: a path or the PEM text)")
	fl.StringSliceVar(&f.trust, "trust-workload", envList("OCEANWAY_TRUSTED_WORKLOADS", ";"),
		"workload=public-key.pem accepted by the consumer and owner read endpoints; repeatable (env OCEANWAY_TRUSTED_WORKLOADS, ';'-separated)")
	fl.StringVar(&f.owner, "owner", os.Getenv("OCEANWAY_OWNER"),
		"run one owner in this process with only its own database: core, execution, gateway or metering (its dispatchers, consumers, workers and read endpoint; the others by --owner-url and --consumer-url) (env OCEANWAY_OWNER)")
	fl.StringSliceVar(&f.serveReads, "serve-reads", envList("OCEANWAY_SERVE_READS", ","),
		"serve these owners' directed reads on --consumer-listen: core, execution, gateway, metering (env OCEANWAY_SERVE_READS)")
	fl.StringSliceVar(&f.ownerURLs, "owner-url", envList("OCEANWAY_OWNER_URLS", ","),
		"reach an owner's reads in another process instead of its database: owner=http(s)://host:port, signed with --workload-key (env OCEANWAY_OWNER_URLS)")
	f.cases.register(cmd)
}

func envList(name, sep string) []string {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, sep) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// defaultWorkload is --workload's default without --owner.
const defaultWorkload = "oceanway-dispatcher"

// builtConsumers are the destinations whose consumer exists in this build
// and runs in process when everything runs in one process (the settlement
// catch-up consumer runs there beside the coordinator).
var builtConsumers = []route.Destination{route.CoreOperations, route.MeteringInputProcessor, route.BillingFinalizationCoordinator}

// ownerRoles is what `serve --owner` runs for each owner: its database's
// dispatchers, the consumers that work in its database, its read endpoint,
// and what it needs from elsewhere (the consumers its events go to, the
// owners whose reads its consumers and workers call).
var ownerRoles = map[boundary.Boundary]struct {
	consume   []route.Destination
	needsURL  []route.Destination
	needsRead []boundary.Boundary
}{
	boundary.Core: {consume: []route.Destination{route.CoreOperations, route.BillingFinalizationCoordinator, route.BillingSettlementCatchUp},
		needsRead: []boundary.Boundary{boundary.Execution, boundary.Gateway, boundary.Metering}},
	boundary.Execution: {needsURL: []route.Destination{route.MeteringInputProcessor, route.BillingFinalizationCoordinator}},
	boundary.Gateway:   {needsURL: []route.Destination{route.MeteringInputProcessor}},
	boundary.Metering: {consume: []route.Destination{route.MeteringInputProcessor},
		needsURL: []route.Destination{route.BillingSettlementCatchUp}, needsRead: []boundary.Boundary{boundary.Execution, boundary.Gateway, boundary.Core}},
}

// consumerReads are the owner databases a consumer reads through its
// event-bound owner reads (the Metering input processor verifies every
// event with Execution's and Gateway's reads; its worker also reads Core's
// RunAdmissionManifest for the settlement economic identity).
var consumerReads = map[route.Destination][]boundary.Boundary{
	route.MeteringInputProcessor: {boundary.Execution, boundary.Gateway, boundary.Core},
}

// consumerBoundary is the database each consumer works in (DESIGN.md §2).
var consumerBoundary = map[route.Destination]boundary.Boundary{
	route.CoreOperations:                 boundary.Core,
	route.MeteringInputProcessor:         boundary.Metering,
	route.BillingFinalizationCoordinator: boundary.Core,
	route.BillingSettlementCatchUp:       boundary.Core,
}

// rolePlan is the validated selection.
type rolePlan struct {
	legacy   bool                // no role flag: everything in process
	dispatch []boundary.Boundary // dispatcher roles
	consume  []route.Destination // consumer endpoints served here (also in-process for local dispatchers)
	remote   map[route.Destination]string
	// serveReads are the owners whose reads this process answers;
	// ownerURLs the owners it reads in another process (their databases
	// are never opened here).
	serveReads []boundary.Boundary
	ownerURLs  map[boundary.Boundary]string
	// serveCases are the reconciliation chain services this process
	// answers (operations, grants, billing; all in the core database).
	serveCases []string
}

// databases are the boundary databases the plan's roles use, in the fixed
// order: only these are resolved, migrated and opened.
func (p rolePlan) databases() []boundary.Boundary {
	var out []boundary.Boundary
	for _, b := range boundary.All {
		used := slices.Contains(p.dispatch, b) || slices.Contains(p.serveReads, b) || (b == boundary.Core && len(p.serveCases) > 0)
		for _, d := range p.consume {
			_, remote := p.ownerURLs[b]
			used = used || consumerBoundary[d] == b || (slices.Contains(consumerReads[d], b) && !remote)
		}
		if used {
			out = append(out, b)
		}
	}
	return out
}

// plan validates the role flags.
func (f *roleFlags) plan() (rolePlan, error) {
	if len(f.dispatch) == 0 && len(f.consume) == 0 && len(f.consumerURLs) == 0 && f.owner == "" && len(f.serveReads) == 0 &&
		len(f.ownerURLs) == 0 && len(f.cases.serve) == 0 {
		return rolePlan{legacy: true, dispatch: slices.Clone(boundary.All), consume: slices.Clone(builtConsumers)}, nil
	}
	p := rolePlan{remote: map[route.Destination]string{}, ownerURLs: map[boundary.Boundary]string{}}
	if f.owner != "" {
		o, err := boundary.Parse(f.owner)
		if err != nil {
			return rolePlan{}, fmt.Errorf("--owner: %w", err)
		}
		f.dispatch = appendNew(f.dispatch, string(o))
		f.serveReads = appendNew(f.serveReads, string(o))
		for _, d := range ownerRoles[o].consume {
			f.consume = appendNew(f.consume, string(d))
		}
	}
	for _, s := range f.serveReads {
		b, err := boundary.Parse(s)
		if err != nil {
			return rolePlan{}, fmt.Errorf("--serve-reads: %w", err)
		}
		if !slices.Contains(p.serveReads, b) {
			p.serveReads = append(p.serveReads, b)
		}
	}
	for _, s := range f.ownerURLs {
		name, u, ok := strings.Cut(s, "=")
		if !ok {
			return rolePlan{}, fmt.Errorf("--owner-url %q: want owner=URL", s)
		}
		b, err := boundary.Parse(name)
		if err != nil {
			return rolePlan{}, fmt.Errorf("--owner-url: %w", err)
		}
		if slices.Contains(p.serveReads, b) {
			return rolePlan{}, fmt.Errorf("--owner-url %s: this process answers that owner's reads itself", b)
		}
		p.ownerURLs[b] = u
	}
	for _, s := range f.dispatch {
		if s == "all" {
			p.dispatch = slices.Clone(boundary.All)
			continue
		}
		b, err := boundary.Parse(s)
		if err != nil {
			return rolePlan{}, fmt.Errorf("--dispatch: %w", err)
		}
		if !slices.Contains(p.dispatch, b) {
			p.dispatch = append(p.dispatch, b)
		}
	}
	for _, s := range f.consume {
		d, err := route.ParseDestination(s)
		if err != nil {
			return rolePlan{}, fmt.Errorf("--consume: %w", err)
		}
		// Every destination has an endpoint (route.ParseDestination
		// accepts exactly the four).
		if !slices.Contains(p.consume, d) {
			p.consume = append(p.consume, d)
		}
	}
	for _, s := range f.consumerURLs {
		name, u, ok := strings.Cut(s, "=")
		if !ok {
			return rolePlan{}, fmt.Errorf("--consumer-url %q: want destination=URL", s)
		}
		d, err := route.ParseDestination(name)
		if err != nil {
			return rolePlan{}, fmt.Errorf("--consumer-url: %w", err)
		}
		if slices.Contains(p.consume, d) {
			return rolePlan{}, fmt.Errorf("--consumer-url %s: this process serves that consumer itself (--consume)", d)
		}
		p.remote[d] = u
	}
	if len(p.remote) > 0 && len(p.dispatch) == 0 {
		return rolePlan{}, errors.New("--consumer-url needs a dispatcher role (--dispatch)")
	}
	for _, s := range f.cases.serve {
		if !slices.Contains(caseServices, s) {
			return rolePlan{}, fmt.Errorf("--serve-cases %q: want one of %v", s, caseServices)
		}
		if !slices.Contains(p.serveCases, s) {
			p.serveCases = append(p.serveCases, s)
		}
	}
	if len(p.dispatch) == 0 && len(p.consume) == 0 && len(p.serveReads) == 0 && len(p.serveCases) == 0 {
		return rolePlan{}, errors.New("no role: give --owner, --dispatch, --consume, --serve-reads and/or --serve-cases")
	}
	if f.owner != "" {
		o := boundary.Boundary(f.owner)
		if err := p.completeFor(o); err != nil {
			return rolePlan{}, err
		}
		// The owners it reads know it as owner.<owner> (ownerhttp.Callers).
		switch want := ownerhttp.OwnerWorkload(string(o)); f.workloadName {
		case "", defaultWorkload:
			f.workloadName = want
		case want:
		default:
			if len(p.ownerURLs) > 0 {
				return rolePlan{}, fmt.Errorf("--owner %s calls the other owners' reads as workload %s, not %q", o, want, f.workloadName)
			}
		}
		// One owner per process means its database only: a role flag (or
		// its environment variable) that would open another is refused.
		if dbs := p.databases(); len(dbs) != 1 || dbs[0] != o {
			return rolePlan{}, fmt.Errorf("--owner %s runs with only its own database, but the other role flags would open %v", o, dbs)
		}
	}
	if len(p.dispatch) > 0 && len(p.consume) == 0 && len(p.remote) == 0 {
		return rolePlan{}, errors.New("--dispatch has nothing to deliver to: add --consumer-url destination=URL (or --consume)")
	}
	return p, nil
}

// completeFor refuses an owner process that lacks an address it needs: a
// consumer its events go to, an owner whose reads it calls.
func (p rolePlan) completeFor(o boundary.Boundary) error {
	var missing []string
	for _, d := range ownerRoles[o].needsURL {
		if _, ok := p.remote[d]; !ok && !slices.Contains(p.consume, d) {
			missing = append(missing, "--consumer-url "+string(d)+"=URL")
		}
	}
	for _, b := range ownerRoles[o].needsRead {
		if _, ok := p.ownerURLs[b]; !ok {
			missing = append(missing, "--owner-url "+string(b)+"=URL")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--owner %s runs with only its own database: it needs %s", o, strings.Join(missing, ", "))
	}
	return nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// caller is how this process calls other processes: its workload signer
// and the TLS configuration of https URLs.
func (f *roleFlags) caller() (*workload.Signer, *tls.Config, error) {
	signer, err := f.signer()
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := f.clientTLS()
	if err != nil {
		return nil, nil, err
	}
	return signer, tlsCfg, nil
}

// signer loads this process's workload key.
func (f *roleFlags) signer() (*workload.Signer, error) {
	spec := f.workloadKey
	if spec == "" {
		spec = os.Getenv("OCEANWAY_WORKLOAD_KEY")
	}
	if spec == "" {
		return nil, errors.New("--consumer-url and --owner-url need a workload key: --workload-key or OCEANWAY_WORKLOAD_KEY")
	}
	key, err := workload.LoadPrivateKey(spec)
	if err != nil {
		return nil, fmt.Errorf("--workload-key: %w", err)
	}
	return workload.NewSigner(workload.SignerConfig{Workload: f.workloadName, Key: key})
}

// trusted loads the workload keys the consumer endpoints accept.
func (f *roleFlags) trusted() ([]workload.Trusted, error) {
	if len(f.trust) == 0 {
		return nil, errors.New("--consume and --serve-reads need the keys of the workloads they accept: --trust-workload name=public-key.pem")
	}
	var out []workload.Trusted
	for _, s := range f.trust {
		name, spec, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--trust-workload %q: want workload=public-key", s)
		}
		key, err := workload.LoadPublicKey(spec)
		if err != nil {
			return nil, fmt.Errorf("--trust-workload %s: %w", name, err)
		}
		out = append(out, workload.Trusted{Workload: name, Key: key})
	}
	return out, nil
}

// clientTLS is the TLS configuration for https consumer URLs.
func (f *roleFlags) clientTLS() (*tls.Config, error) {
	if f.tlsCA == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(f.tlsCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no certificate", f.tlsCA)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
