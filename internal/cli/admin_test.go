package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
	"github.com/oceanway/core/internal/cli"
	"github.com/oceanway/core/internal/dbtest"
)

// startAdmin runs `oceanway admin --listen 127.0.0.1:0 ARGS` in process
// and returns its base URL (read from its first output line) and a stop
// func that cancels it and returns its error.
func startAdmin(t *testing.T, w *admintest.World, args ...string) (string, func() error) {
	t.Helper()
	srv := dbtest.Server(t)
	pr, pw := io.Pipe()
	var stderr strings.Builder
	root := cli.NewRoot(&cli.IO{In: strings.NewReader(""), Out: pw, Err: &stderr})
	root.SetArgs(append([]string{"admin", "--listen", "127.0.0.1:0", "--database-url", srv.URL, "--db-prefix", w.Bundle.Prefix}, args...))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		_ = pw.CloseWithError(io.EOF)
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`^oceanway admin: (http://127\.0\.0\.1:\d+)/ \(read-only, ([^)]*)\) for core, execution\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("oceanway admin did not stop")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return m[1], stop
}

func httpDo(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	status, _, body := admintest.Do(t, method, url, token)
	return status, body
}

func TestAdminCommandServesTheReadOnlyPage(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	base, stop := startAdmin(t, w, "--token", "tok")

	status, _ := httpDo(t, http.MethodGet, base+"/", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, page := httpDo(t, http.MethodGet, base+"/", "tok")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "no skip, force-success, edit-payload or replay action")
	require.Regexp(t, `(?s)<tr data-boundary="core" data-destination="core_operations">.*?data-field="acknowledged">1<`, page)

	status, body := httpDo(t, http.MethodGet, base+"/api/lookup?kind=event&id="+w.QuarantinedEvent, "tok")
	require.Equal(t, http.StatusOK, status)
	var res admin.LookupResult
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	require.Len(t, res.Events[0].Deliveries[0].Attempts, 2)

	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		status, _ = httpDo(t, method, base+"/api/quarantine", "tok")
		require.Equal(t, http.StatusMethodNotAllowed, status, method)
	}
	require.NoError(t, stop(), "a cancelled admin command shuts down cleanly")
}

// Not parallel: it sets the environment.
func TestAdminCommandTakesTheTokenFromTheEnvironment(t *testing.T) {
	t.Setenv("OCEANWAY_ADMIN_TOKEN", "from-env")
	w := admintest.NewWorld(t)
	base, stop := startAdmin(t, w)
	status, _ := httpDo(t, http.MethodGet, base+"/api/overview", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = httpDo(t, http.MethodGet, base+"/api/overview", "from-env")
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, stop())
}
