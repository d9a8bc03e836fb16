package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/workload"
)

// OwnerReads puts every owner's directed reads behind a real loopback HTTP
// listener (`oceanway demo --transport http`): the Metering and Billing
// workers and the Metering input processor call Core, Execution, Gateway
// and Metering through ownerhttp clients with throwaway workload keys, as
// they would call owners in other processes; only the process boundary is
// missing. Under --chaos one answer in 20 is dropped after the owner
// answered (the connection is cut), so the callers' retries are exercised.
type OwnerReads struct {
	// clients[caller][owner] is the client the caller owner's workers use
	// to call owner's reads, signing as owner.<caller>.
	clients   map[string]map[string]*ownerhttp.Client
	Metrics   *ownerhttp.Metrics
	srv       *http.Server
	done      chan struct{}
	dropOneIn atomic.Int64
	dropped   atomic.Int64
}

// owners are the four owners, callers and callees alike.
var owners = []string{ownerhttp.OwnerCore, ownerhttp.OwnerExecution, ownerhttp.OwnerGateway, ownerhttp.OwnerMetering}

// StartOwnerReads serves served on 127.0.0.1 and makes, for every caller
// owner, a client per owner served, each signing as owner.<caller> with a
// throwaway key (ownerhttp.Callers decides which reads each may call).
func StartOwnerReads(served ownerhttp.Served, reg prometheus.Registerer) (*OwnerReads, error) {
	var trusted []workload.Trusted
	signers := map[string]*workload.Signer{}
	for _, caller := range owners {
		priv, pub, err := workload.Generate()
		if err != nil {
			return nil, err
		}
		who := ownerhttp.OwnerWorkload(caller)
		if signers[caller], err = workload.NewSigner(workload.SignerConfig{Workload: who, Key: priv}); err != nil {
			return nil, err
		}
		trusted = append(trusted, workload.Trusted{Workload: who, Key: pub})
	}
	verifiers := map[string]*workload.Verifier{}
	for _, o := range owners {
		var err error
		if verifiers[o], err = workload.NewVerifier(workload.VerifierConfig{Audience: ownerhttp.Audience(o), Trusted: trusted}); err != nil {
			return nil, err
		}
	}
	h, err := ownerhttp.Handler(ownerhttp.ServerConfig{Served: served, Verifiers: verifiers})
	if err != nil {
		return nil, err
	}
	n := &OwnerReads{clients: map[string]map[string]*ownerhttp.Client{}, Metrics: ownerhttp.NewMetrics(reg), done: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.srv = &http.Server{Handler: n.dropping(h), ReadHeaderTimeout: 5 * time.Second}
	go func() { defer close(n.done); _ = n.srv.Serve(ln) }()
	for _, caller := range owners {
		n.clients[caller] = map[string]*ownerhttp.Client{}
		for _, o := range owners {
			c, err := ownerhttp.NewClient(ownerhttp.ClientConfig{Owner: o, BaseURL: "http://" + ln.Addr().String(), Signer: signers[caller], Metrics: n.Metrics})
			if err != nil {
				_ = n.Close()
				return nil, err
			}
			n.clients[caller][o] = c
		}
	}
	return n, nil
}

// ClientsFor are the clients the caller owner's workers use, by owner.
func (n *OwnerReads) ClientsFor(caller string) map[string]*ownerhttp.Client { return n.clients[caller] }

// dropping answers through h and, when chaos asks, cuts the connection
// instead of sending an answer the owner already produced (and, for the
// operation-bound validations, already stored).
func (n *OwnerReads) dropping(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.dropOneIn.Load()
		if k == 0 || rand.Int64N(k) != 0 {
			h.ServeHTTP(w, r)
			return
		}
		rec := &discardWriter{header: http.Header{}}
		h.ServeHTTP(rec, r)
		n.dropped.Add(1)
		panic(http.ErrAbortHandler) // the server closes the connection: the answer is lost
	})
}

type discardWriter struct {
	header http.Header
	body   bytes.Buffer
}

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(b []byte) (int, error) { return d.body.Write(b) }
func (d *discardWriter) WriteHeader(int)             {}

// DropAnswers makes the endpoint drop one answer in oneIn; 0 stops it.
func (n *OwnerReads) DropAnswers(oneIn int) { n.dropOneIn.Store(int64(oneIn)) }

// Dropped is the number of answers dropped so far.
func (n *OwnerReads) Dropped() int64 { return n.dropped.Load() }

// Calls is the number of owner read calls made over HTTP, and how many of
// them got no answer (dropped, refused or failed: the caller retried).
func (n *OwnerReads) Calls() (total, unavailable int64) {
	ch := make(chan prometheus.Metric, 64)
	go func() { n.Metrics.Calls.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) != nil {
			continue
		}
		v := int64(pb.GetCounter().GetValue())
		total += v
		for _, l := range pb.GetLabel() {
			if l.GetName() == "outcome" && l.GetValue() == ownerhttp.OutcomeUnavailable {
				unavailable += v
			}
		}
	}
	return total, unavailable
}

// Close stops the listener and the clients.
func (n *OwnerReads) Close() error {
	for _, byOwner := range n.clients {
		for _, c := range byOwner {
			c.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := n.srv.Shutdown(ctx)
	<-n.done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("demo owner reads: %w", err)
	}
	return nil
}
