package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin/admintest"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/server"
)

// serve mounts the admin page with server.Handler under /admin/ (behind
// http.StripPrefix): links stay under /admin and the token is enforced.
func TestServeMountsTheAdminPage(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	pools := server.Pools{boundary.Core: w.Bundle.Core(), boundary.Execution: w.Bundle.Execution()}
	h, err := adminHandler(pools, "tok")
	require.NoError(t, err)
	srv := httptest.NewServer(server.Handler(server.HTTPConfig{Registry: prometheus.NewRegistry(), Pools: pools, Admin: h}))
	t.Cleanup(srv.Close)

	get := func(path, token string) (int, string) {
		status, _, body := admintest.Do(t, http.MethodGet, srv.URL+path, token)
		return status, body
	}
	status, _ := get("/admin/", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, page := get("/admin/", "tok")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `href="/admin/static/admin.css"`)
	require.Contains(t, page, `action="/admin/lookup"`)
	require.Regexp(t, `(?s)<tr data-boundary="execution" data-destination="metering_input_processor">.*?data-field="pending">1<`, page)
	status, page = get("/admin/lookup?kind=run&id="+w.RunA, "tok")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "3 events for run")
	status, _ = get("/admin/static/admin.css", "tok")
	require.Equal(t, http.StatusOK, status)
}
