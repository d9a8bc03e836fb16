package cli

import (
	"net/http"

	"github.com/oceanway/core/internal/runtime"
)

// adminHandler returns the read-only admin page mounted by serve (nil until
// the admin package is wired).
func adminHandler(_ runtime.Pools, _ string) (http.Handler, error) { return nil, nil }
