package cli

import (
	"net/http"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/server"
)

// AdminBasePath is where `oceanway serve` mounts the admin page.
const AdminBasePath = "/admin"

// adminHandler returns the read-only admin page over the boundary pools,
// with its links under AdminBasePath (serve mounts it behind
// http.StripPrefix(AdminBasePath, ...)). A non-empty token is required as
// "Authorization: Bearer <token>" on every request.
func adminHandler(pools server.Pools, token string) (http.Handler, error) {
	return admin.NewHandler(admin.NewReader(adminBoundaries(pools), admin.Config{}), admin.HandlerConfig{
		Token:    token,
		BasePath: AdminBasePath,
	}), nil
}

// adminBoundaries names the pools for the admin reader.
func adminBoundaries(pools server.Pools) admin.Boundaries {
	out := admin.Boundaries{}
	for b, p := range pools {
		out[string(b)] = p
	}
	return out
}
