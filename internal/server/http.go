package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HTTPConfig is the operations surface of a serving process.
type HTTPConfig struct {
	Registry *prometheus.Registry
	Pools    Pools
	// Admin, when set, is mounted under /admin/ (read-only admin page).
	Admin http.Handler
	// API, when set, is the platform API: /v1/..., /openapi.json, /docs.
	API http.Handler
	// ReadyTimeout bounds the readiness ping. Default 2s.
	ReadyTimeout time.Duration
}

// Handler serves /metrics (Prometheus), /healthz (the process is up),
// /readyz (every boundary database answers) and, when configured, the
// platform API and /admin/.
func Handler(cfg HTTPConfig) http.Handler {
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 2 * time.Second
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), cfg.ReadyTimeout)
		defer cancel()
		for _, b := range cfg.Pools.Boundaries() {
			if err := cfg.Pools[b].Ping(ctx); err != nil {
				http.Error(w, fmt.Sprintf("%s: not ready", b), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	if cfg.API != nil {
		mux.Handle("/v1/", cfg.API)
		mux.Handle("GET /openapi.json", cfg.API)
		mux.Handle("GET /docs", cfg.API)
	}
	if cfg.Admin != nil {
		mux.Handle("/admin/", http.StripPrefix("/admin", cfg.Admin))
		mux.Handle("GET /{$}", http.RedirectHandler("/admin/", http.StatusFound))
	}
	return mux
}
