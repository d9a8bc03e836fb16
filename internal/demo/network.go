package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/outbox/transport/httptransport"
	"github.com/oceanway/core/internal/workload"
)

// Transports of the demo.
const (
	TransportInProcess = "inprocess"
	TransportHTTP      = "http"
)

// Network puts the demo's consumers behind a real loopback HTTP listener
// (`oceanway demo --transport http`): the dispatchers reach them through the
// HTTP transport with throwaway workload keys, exactly as separate processes
// would (`oceanway serve` roles); only the process boundary is missing.
type Network struct {
	Client    *httptransport.Client
	Metrics   *httptransport.Metrics
	srv       *http.Server
	done      chan struct{}
	dropOneIn atomic.Int64 // 0: never
	dropped   atomic.Int64
}

// StartNetwork serves consumers on 127.0.0.1 and returns the client that
// reaches them. The dispatcher workload and the keys are generated here and
// never leave the process.
func StartNetwork(consumers map[route.Destination]transport.ConsumerFunc, reg prometheus.Registerer) (*Network, error) {
	priv, pub, err := workload.Generate()
	if err != nil {
		return nil, err
	}
	const who = "demo.dispatcher"
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: who, Key: priv})
	if err != nil {
		return nil, err
	}
	n := &Network{Metrics: httptransport.NewMetrics(reg), done: make(chan struct{})}
	endpoints := map[route.Destination]httptransport.Endpoint{}
	for d, c := range consumers {
		aud, err := httptransport.Audience(d)
		if err != nil {
			return nil, err
		}
		v, err := workload.NewVerifier(workload.VerifierConfig{Audience: aud, Trusted: []workload.Trusted{{Workload: who, Key: pub}}})
		if err != nil {
			return nil, err
		}
		endpoints[d] = httptransport.Endpoint{Consume: c, Verifier: v}
	}
	h, err := httptransport.NewHandler(httptransport.HandlerConfig{
		Endpoints: endpoints, Metrics: n.Metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AfterConsume: func(transport.Delivery) bool {
			if k := n.dropOneIn.Load(); k > 0 && rand.Int64N(k) == 0 {
				n.dropped.Add(1)
				return false
			}
			return true
		},
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// The aborted handlers of dropped responses are expected: keep the
	// server's log quiet.
	n.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	go func() { defer close(n.done); _ = n.srv.Serve(ln) }()
	urls := map[route.Destination]string{}
	for d := range consumers {
		urls[d] = "http://" + ln.Addr().String()
	}
	n.Client, err = httptransport.NewClient(httptransport.ClientConfig{Endpoints: urls, Signer: signer, Metrics: n.Metrics})
	if err != nil {
		_ = n.srv.Close()
		return nil, err
	}
	return n, nil
}

// DropResponses makes the endpoint drop one answer in oneIn after the
// consumer committed (chaos); 0 stops it.
func (n *Network) DropResponses(oneIn int) { n.dropOneIn.Store(int64(oneIn)) }

// Dropped is the number of answers dropped so far.
func (n *Network) Dropped() int64 { return n.dropped.Load() }

// Close stops the listener and the client.
func (n *Network) Close() error {
	n.Client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := n.srv.Shutdown(ctx)
	<-n.done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("demo network: %w", err)
	}
	return nil
}
