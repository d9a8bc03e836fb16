package cli

import (
	"context"
	"crypto/ed25519"
	"net"
	"net/http"
	"time"

	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/coreapi"
	"github.com/oceanway/core/internal/api/executionapi"
	"github.com/oceanway/core/internal/api/gatewayapi"
	"github.com/oceanway/core/internal/api/meteringapi"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/demo"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/pgserver"
	"github.com/oceanway/core/internal/runtoken"
	"github.com/oceanway/core/internal/server"
	"github.com/oceanway/core/internal/workload"
)

// demoAPI is the platform API of every owner, served by the demo itself on
// a loopback port (demo --via api): each owner's operations over its own
// database as its own role, the callers' tokens verified, the keys stored,
// exactly as serve answers them. The scenario then drives the whole loop
// through it over HTTP with the generated client, as a platform would.
type demoAPI struct {
	srv      *http.Server
	pools    []server.Pools
	platform *demo.APIPlatform
	url      string
}

// startDemoAPI serves the API and returns the platform that calls it, as
// the workload "platform" (a key generated for this demo).
func startDemoAPI(ctx context.Context, serverURL, prefix string, reads demo.ExecutionOwnerReads) (_ *demoAPI, err error) {
	d := &demoAPI{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	dsn := func(b boundary.Boundary) map[boundary.Boundary]string {
		return map[boundary.Boundary]string{b: pgserver.WithDatabase(serverURL, migrate.DatabaseName(prefix, b))}
	}
	open := func(b boundary.Boundary, role string) (server.Pools, error) {
		p, err := openRolePools(ctx, dsn(b), 8, role)
		if err == nil {
			d.pools = append(d.pools, p)
		}
		return p, err
	}
	adm, err := open(boundary.Core, admissionschema.RoleAdmission)
	if err != nil {
		return nil, err
	}
	bil, err := open(boundary.Core, billingschema.RoleBilling)
	if err != nil {
		return nil, err
	}
	exe, err := open(boundary.Execution, executionschema.RoleExecution)
	if err != nil {
		return nil, err
	}
	gw, err := open(boundary.Gateway, gatewayschema.RoleGateway)
	if err != nil {
		return nil, err
	}
	met, err := open(boundary.Metering, meteringschema.RoleMetering)
	if err != nil {
		return nil, err
	}
	tokenKey, _, err := workload.Generate()
	if err != nil {
		return nil, err
	}
	tokens, err := runtoken.NewSigner(tokenKey)
	if err != nil {
		return nil, err
	}
	tokenVerifier, err := runtoken.NewVerifier(tokenKey.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	platformKey, platformPub, err := workload.Generate()
	if err != nil {
		return nil, err
	}
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: keyPlatform, Key: platformKey})
	if err != nil {
		return nil, err
	}
	served := map[api.Owner]api.Served{}
	for o, pool := range map[api.Owner]server.Pools{api.OwnerCore: adm, api.OwnerExecution: exe, api.OwnerGateway: gw, api.OwnerMetering: met} {
		v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.Audience(o), Trusted: []workload.Trusted{{Workload: keyPlatform, Key: platformPub}}})
		if err != nil {
			return nil, err
		}
		sv := api.Served{Verifier: v}
		for _, p := range pool {
			if api.KeyTables[o] != "" {
				sv.Keys = &api.KeyStore{Pool: p, Table: api.KeyTables[o]}
			}
		}
		served[o] = sv
	}
	h, err := api.Handler(api.Config{
		Core:      coreapi.Server{Admission: adm[boundary.Core], Billing: bil[boundary.Core], Tokens: tokens},
		Execution: executionapi.Server{Pool: exe[boundary.Execution], Core: reads.Manifest, Gateway: reads.Gateway, Tokens: tokenVerifier},
		Gateway:   gatewayapi.Server{Pool: gw[boundary.Gateway]},
		Metering:  meteringapi.Server{Pool: met[boundary.Metering]},
		Served:    served,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d.url = "http://" + ln.Addr().String()
	d.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.srv.Serve(ln) }() // ends with Close
	urls := map[api.Owner]string{}
	for _, o := range api.Owners {
		urls[o] = d.url
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64 // the admission sessions share one host
	if d.platform, err = demo.NewAPIPlatform(urls, signer, &http.Client{Transport: transport, Timeout: 30 * time.Second}); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *demoAPI) Close() {
	if d.srv != nil {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.srv.Shutdown(shutdown)
	}
	for _, p := range d.pools {
		p.Close()
	}
}

// externalAPI is the platform of a running serve's API (demo --via api
// --api URL): every owner's operations at url, signed as the platform
// workload of the keys directory.
func externalAPI(url, keys string) (*demo.APIPlatform, error) {
	keyPath, err := keysDir{dir: keys}.private(keyPlatform)
	if err != nil {
		return nil, err
	}
	key, err := workload.LoadPrivateKey(keyPath)
	if err != nil {
		return nil, err
	}
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: keyPlatform, Key: key})
	if err != nil {
		return nil, err
	}
	urls := map[api.Owner]string{}
	for _, o := range api.Owners {
		urls[o] = url
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	return demo.NewAPIPlatform(urls, signer, &http.Client{Transport: transport, Timeout: 30 * time.Second})
}
