package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/demo"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/pgserver"
	"github.com/oceanway/core/internal/workload"
)

// ownerAppName is the application_name of every session of an owner
// process (PGAPPNAME in its environment): the demo proves from
// pg_stat_activity that each owner process is connected only to its own
// database.
func ownerAppName(b boundary.Boundary) string { return "oceanway-serve-" + string(b) }

// ownerProcesses runs each owner as its own `oceanway serve --owner`
// process (`oceanway demo --processes`): its own database's DSN only, its
// own workload key, the others' consumer endpoints and owner reads by URL.
type ownerProcesses struct {
	serverURL string
	prefix    string
	dir       string
	procs     []*ownerProcess
	sockets   []*os.File // every process's listeners, open until stop
	kills     atomic.Int64
	restarts  atomic.Int64

	endpoints   map[boundary.Boundary]string // each owner's first process: consumer endpoints and reads
	apis        map[boundary.Boundary]string // each owner's first process: its platform API (--listen)
	clients     []*ownerhttp.Client
	sampler     *pgx.Conn // one session for every pg_stat_activity sample
	stopSampler context.CancelFunc
	samplerDone chan struct{}

	mu          sync.Mutex
	samples     int
	sessions    map[boundary.Boundary]int64 // sessions seen per owner, over all samples
	foreign     map[string]bool
	sampleErr   error
	supervision []string // what went wrong with the processes themselves
	unexpected  int64    // exits that were not a chaos kill
}

type ownerProcess struct {
	owner   boundary.Boundary
	replica int
	metrics string // the /metrics URL
	args    []string
	env     []string
	ready   string // the readiness URL
	logPath string
	// sockets are the process's two listeners (fd 3: --listen, fd 4:
	// --consumer-listen), bound by the demo and kept open across restarts.
	sockets []*os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// startOwnerProcesses writes the owners' keys to a temporary directory,
// starts replicas processes of each of the four owners and waits until each
// is ready. The other owners' consumer endpoints and reads are reached at
// each owner's first process; every replica runs its owner's dispatchers and
// workers on the same database (leases and SKIP LOCKED share the work).
func startOwnerProcesses(ctx context.Context, serverURL, prefix string, disp dispatcherFlags, replicas int) (_ *ownerProcesses, err error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo --processes: %w", err)
	}
	dir, err := os.MkdirTemp("", "oceanway-owners-")
	if err != nil {
		return nil, err
	}
	p := &ownerProcesses{serverURL: serverURL, prefix: prefix, dir: dir, foreign: map[string]bool{}, sessions: map[boundary.Boundary]int64{},
		endpoints: map[boundary.Boundary]string{}, apis: map[boundary.Boundary]string{}}
	defer func() {
		if err != nil {
			p.stop() // no key, process or session outlives a failed start
		}
	}()
	// Sampling starts before the first process does: its start-up (role
	// checks, pools) is proved too.
	if p.sampler, err = pgx.Connect(ctx, serverURL); err != nil {
		return nil, fmt.Errorf("demo --processes: pg_stat_activity session: %w", err)
	}
	sampleCtx, stopSampler := context.WithCancel(context.WithoutCancel(ctx))
	p.stopSampler, p.samplerDone = stopSampler, make(chan struct{})
	go p.sampleUntil(sampleCtx)
	type addr struct {
		listen, endpoint string
		sockets          []*os.File
	}
	addrs := map[boundary.Boundary][]addr{}
	var trust []string
	// The platform API's keys: Core's run execution token key and the
	// platform workload (the demo's driver with --via api) every owner
	// process trusts.
	for _, name := range []string{keyCoreToken, keyPlatform} {
		if err := writeKeyPair(dir, name); err != nil {
			return nil, err
		}
	}
	trust = append(trust, "--trust-workload", keyPlatform+"="+filepath.Join(dir, keyPlatform+".pub"))
	for _, b := range boundary.All {
		priv, pub, err := workload.Generate()
		if err != nil {
			return nil, err
		}
		privPEM, err := workload.EncodePrivateKey(priv)
		if err != nil {
			return nil, err
		}
		pubPEM, err := workload.EncodePublicKey(pub)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, string(b)+".key"), privPEM, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, string(b)+".pub"), pubPEM, 0o600); err != nil {
			return nil, err
		}
		trust = append(trust, "--trust-workload", ownerhttp.OwnerWorkload(string(b))+"="+filepath.Join(dir, string(b)+".pub"))
		for range max(1, replicas) {
			l, lf, err := loopbackSocket()
			if err != nil {
				return nil, err
			}
			p.sockets = append(p.sockets, lf)
			e, ef, err := loopbackSocket()
			if err != nil {
				return nil, err
			}
			p.sockets = append(p.sockets, ef)
			addrs[b] = append(addrs[b], addr{listen: l, endpoint: e, sockets: []*os.File{lf, ef}})
		}
	}
	url := func(b boundary.Boundary) string { return "http://" + addrs[b][0].endpoint }
	for _, b := range boundary.All {
		p.endpoints[b] = url(b)
		p.apis[b] = "http://" + addrs[b][0].listen
	}
	// Every process's pools share the server's connection budget (a
	// default server allows 100, this process's own pools take about 35).
	poolSize := max(2, 6/max(1, replicas))
	// Where each consumer and each owner's reads live.
	consumerAt := map[route.Destination]boundary.Boundary{route.CoreOperations: boundary.Core, route.BillingFinalizationCoordinator: boundary.Core,
		route.BillingSettlementCatchUp: boundary.Core, route.MeteringInputProcessor: boundary.Metering}
	env := childEnv()
	for _, b := range boundary.All {
		for i, a := range addrs[b] {
			args := []string{"serve", "--owner", string(b), "--" + string(b) + "-dsn", pgserver.WithDatabase(serverURL, migrate.DatabaseName(prefix, b)),
				"--migrate=false", "--listen", "fd:3", "--consumer-listen", "fd:4",
				"--workload", ownerhttp.OwnerWorkload(string(b)), "--workload-key", filepath.Join(dir, string(b)+".key"),
				// One dispatcher with a few deliveries in flight per owner:
				// four processes share the server's connection budget.
				"--dispatchers", "1", "--concurrency", "4", "--pool-size", fmt.Sprint(poolSize), "--lease", disp.cfg.LeaseDuration.String()}
			args = append(args, trust...)
			roles := ownerRoles[b]
			for _, d := range roles.needsURL {
				args = append(args, "--consumer-url", string(d)+"="+url(consumerAt[d]))
			}
			for _, r := range roles.needsRead {
				args = append(args, "--owner-url", string(r)+"="+url(r))
			}
			// Each owner serves its part of the platform API on --listen:
			// Core signs run tokens, Execution verifies them and reads Core
			// and the Gateway for openRun and not_dispatched.
			switch b {
			case boundary.Core:
				args = append(args, "--token-key", filepath.Join(dir, keyCoreToken+".key"))
			case boundary.Execution:
				args = append(args, "--trust-token-key", filepath.Join(dir, keyCoreToken+".pub"),
					"--owner-url", string(boundary.Core)+"="+url(boundary.Core), "--owner-url", string(boundary.Gateway)+"="+url(boundary.Gateway))
			}
			p.procs = append(p.procs, &ownerProcess{owner: b, replica: i + 1, args: args, env: append(slices.Clone(env), "PGAPPNAME="+ownerAppName(b)),
				ready: "http://" + a.listen + "/readyz", metrics: "http://" + a.listen + "/metrics", logPath: filepath.Join(dir, fmt.Sprintf("%s-%d.log", b, i+1)),
				sockets: a.sockets})
		}
	}
	for _, o := range p.procs {
		if err = o.start(bin); err != nil {
			return nil, err
		}
	}
	for _, o := range p.procs {
		if err = o.waitReady(ctx, 60*time.Second); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// childEnv is this process's environment without any database address or
// role setting: an owner process gets exactly one DSN and its roles on its
// command line, whatever this shell exported.
func childEnv() []string {
	roleVars := []string{"OCEANWAY_DB_PREFIX", "OCEANWAY_OWNER", "OCEANWAY_DISPATCH", "OCEANWAY_CONSUME", "OCEANWAY_CONSUMER_URLS",
		"OCEANWAY_SERVE_READS", "OCEANWAY_OWNER_URLS", "OCEANWAY_TRUSTED_WORKLOADS", "OCEANWAY_WORKLOAD", "OCEANWAY_WORKLOAD_KEY",
		"OCEANWAY_LISTEN", "OCEANWAY_CONSUMER_LISTEN", "OCEANWAY_POOL_SIZE"}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "PG") || (strings.HasPrefix(k, "OCEANWAY_") && strings.HasSuffix(k, "_DSN")) ||
			slices.Contains(roleVars, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// loopbackSocket binds a loopback port and returns its address and the
// listening socket as a file an owner process inherits: choosing a free
// port and closing it for the child to bind again lets another process
// take it in between (CI saw "address already in use").
func loopbackSocket() (string, *os.File, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = ln.Close() }() // the file below is a duplicate that stays bound
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return "", nil, err
	}
	return ln.Addr().String(), f, nil
}

func (o *ownerProcess) start(bin string) error {
	log, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, o.args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = o.env, log, log, o.sockets
	cmd.SysProcAttr = childProcAttr() // the owner processes die with the demo
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("start owner process %s: %w", o.owner, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(done) }()
	o.mu.Lock()
	o.cmd, o.done = cmd, done
	o.mu.Unlock()
	return nil
}

func (o *ownerProcess) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.ready, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("owner process %s #%d exited before it was ready: %s", o.owner, o.replica, o.tail())
		case <-ctx.Done():
			return fmt.Errorf("owner process %s #%d not ready within %s: %s", o.owner, o.replica, within, o.tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// exited reports whether the process has ended.
func (o *ownerProcess) exited() bool {
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// tail is the end of the process's log, for an error message.
func (o *ownerProcess) tail() string {
	b, _ := os.ReadFile(o.logPath)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return strings.TrimSpace(string(b))
}

// signal sends sig and waits for the process to end (at most wait).
func (o *ownerProcess) signal(sig os.Signal, wait time.Duration) {
	o.mu.Lock()
	cmd, done := o.cmd, o.done
	o.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
}

// executionReads are the Execution owner's reads of Core and the Gateway
// for the demo's driver, which runs the Execution owner as the platform
// would call it: over HTTP to the Core and Gateway processes, signed with
// the Execution owner's key.
func (p *ownerProcesses) executionReads() (demo.ExecutionOwnerReads, error) {
	key, err := workload.LoadPrivateKey(filepath.Join(p.dir, string(boundary.Execution)+".key"))
	if err != nil {
		return demo.ExecutionOwnerReads{}, err
	}
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: ownerhttp.OwnerWorkload(ownerhttp.OwnerExecution), Key: key})
	if err != nil {
		return demo.ExecutionOwnerReads{}, err
	}
	client := func(b boundary.Boundary) (*ownerhttp.Client, error) {
		c, err := ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: string(b), BaseURL: p.endpoints[b], Signer: signer})
		if err == nil {
			p.clients = append(p.clients, c)
		}
		return c, err
	}
	core, err := client(boundary.Core)
	if err != nil {
		return demo.ExecutionOwnerReads{}, err
	}
	gw, err := client(boundary.Gateway)
	if err != nil {
		return demo.ExecutionOwnerReads{}, err
	}
	return demo.ExecutionOwnerReads{Manifest: core.Core(), Gateway: gw.Gateway()}, nil
}

// platform is the demo's driver over the owner processes' own platform
// APIs (demo --processes --via api): each owner's operations at its own
// process, Operations' at Core's, signed as the platform workload.
func (p *ownerProcesses) platform() (*demo.APIPlatform, error) {
	key, err := workload.LoadPrivateKey(filepath.Join(p.dir, keyPlatform+".key"))
	if err != nil {
		return nil, err
	}
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: keyPlatform, Key: key})
	if err != nil {
		return nil, err
	}
	urls := map[api.Owner]string{api.OwnerCore: p.apis[boundary.Core], api.OwnerExecution: p.apis[boundary.Execution],
		api.OwnerGateway: p.apis[boundary.Gateway], api.OwnerMetering: p.apis[boundary.Metering], api.OwnerOperations: p.apis[boundary.Core]}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 32
	return demo.NewAPIPlatform(urls, signer, &http.Client{Transport: transport, Timeout: 30 * time.Second})
}

// Run implements demo.Processes: it supervises the owner processes while
// the demo runs. Without chaos a process that exits fails the run; with
// chaos one process at random is killed (SIGKILL: no drain) every few
// seconds and started again, and one that exits by itself is started again
// and counted.
func (p *ownerProcesses) Run(ctx context.Context, chaos bool) error {
	bin, err := os.Executable()
	if err != nil {
		return p.fail(err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	nextKill := time.Now().Add(2 * time.Second)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for _, o := range p.procs {
			if !o.exited() || ctx.Err() != nil {
				continue
			}
			if !chaos {
				return p.fail(fmt.Errorf("owner process %s #%d exited: %s", o.owner, o.replica, o.tail()))
			}
			p.mu.Lock()
			p.unexpected++
			p.supervision = append(p.supervision, fmt.Sprintf("%s #%d exited by itself", o.owner, o.replica))
			p.mu.Unlock()
			if err := p.restart(ctx, bin, o); err != nil {
				return err
			}
		}
		if chaos && time.Now().After(nextKill) {
			victim := p.procs[rand.IntN(len(p.procs))]
			victim.signal(syscall.SIGKILL, 5*time.Second)
			p.kills.Add(1)
			if err := p.restart(ctx, bin, victim); err != nil {
				return err
			}
			nextKill = time.Now().Add(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
		}
	}
}

// restart starts o again and waits until it is ready.
func (p *ownerProcesses) restart(ctx context.Context, bin string, o *ownerProcess) error {
	if err := o.start(bin); err != nil {
		return p.fail(err)
	}
	if err := o.waitReady(ctx, 60*time.Second); err != nil && ctx.Err() == nil {
		return p.fail(err)
	}
	p.restarts.Add(1)
	return nil
}

// fail records a supervision failure (the summary's
// owner_processes_supervised check) and returns it.
func (p *ownerProcesses) fail(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.supervision = append(p.supervision, err.Error())
	return err
}

// sampleUntil reads pg_stat_activity every 100 ms until ctx ends.
func (p *ownerProcesses) sampleUntil(ctx context.Context) {
	defer close(p.samplerDone)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		p.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads every session of an owner process and records any on a
// database other than its owner's.
func (p *ownerProcesses) sample(ctx context.Context) {
	rows, err := p.sampler.Query(ctx, `SELECT application_name, COALESCE(datname, '') FROM pg_stat_activity WHERE application_name LIKE 'oceanway-serve-%'`)
	if err != nil {
		p.record(nil, nil, err)
		return
	}
	seen := map[boundary.Boundary]int64{}
	var foreign []string
	for rows.Next() {
		var app, db string
		if err := rows.Scan(&app, &db); err != nil {
			p.record(nil, nil, err)
			return
		}
		owner := boundary.Boundary(strings.TrimPrefix(app, "oceanway-serve-"))
		seen[owner]++
		if db != migrate.DatabaseName(p.prefix, owner) {
			foreign = append(foreign, app+" on "+db)
		}
	}
	p.record(seen, foreign, rows.Err())
}

func (p *ownerProcesses) record(seen map[boundary.Boundary]int64, foreign []string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if !errors.Is(err, context.Canceled) && p.sampleErr == nil {
			p.sampleErr = err
		}
		return
	}
	p.samples++
	for o, n := range seen {
		p.sessions[o] += n
	}
	for _, f := range foreign {
		p.foreign[f] = true
	}
}

// Report implements demo.Processes: the isolation samples, and what each
// process's own /metrics says it finished (Work by queue).
func (p *ownerProcesses) Report(ctx context.Context) demo.ProcessReport {
	r := demo.ProcessReport{Kills: p.kills.Load(), Restarts: p.restarts.Load()}
	for _, b := range boundary.All {
		r.Owners = append(r.Owners, string(b))
	}
	for _, o := range p.procs {
		finished, err := scrapeWorkFinished(ctx, o.metrics)
		rep := demo.ProcessWork{Owner: string(o.owner), Replica: o.replica, Finished: finished}
		if err != nil {
			rep.Err = err.Error()
		}
		r.Processes = append(r.Processes, rep)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.Samples, r.Unexpected, r.Supervision = p.samples, p.unexpected, slices.Clone(p.supervision)
	r.Sessions = map[string]int64{}
	for o, n := range p.sessions {
		r.Sessions[string(o)] = n
		r.Connections += n
	}
	for f := range p.foreign {
		r.Foreign = append(r.Foreign, f)
	}
	slices.Sort(r.Foreign)
	if p.sampleErr != nil {
		r.Err = "pg_stat_activity: " + p.sampleErr.Error()
	}
	return r
}

// stop ends every owner process (SIGTERM: each drains its in-flight work),
// the sampling and the keys.
func (p *ownerProcesses) stop() {
	var wg sync.WaitGroup
	for _, o := range p.procs {
		wg.Add(1)
		go func() { defer wg.Done(); o.signal(syscall.SIGTERM, 15*time.Second) }()
	}
	wg.Wait()
	for _, f := range p.sockets {
		_ = f.Close() // every process has ended: nothing accepts on it any more
	}
	for _, c := range p.clients {
		c.Close()
	}
	if p.stopSampler != nil {
		p.stopSampler()
		<-p.samplerDone
	}
	if p.sampler != nil {
		_ = p.sampler.Close(context.Background()) // read-only session
	}
	_ = os.RemoveAll(p.dir)
}

// scrapeWorkFinished reads oceanway_work_finishes_total of one process, by
// queue (since that process last started).
func scrapeWorkFinished(ctx context.Context, url string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read below
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	if f, ok := families["oceanway_work_finishes_total"]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue" {
					out[l.GetValue()] += int64(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out, nil
}
