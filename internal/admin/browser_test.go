package admin_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
)

// EnvRequireBrowser makes the browser smoke test fail instead of skip when
// no Chromium is installed (CI sets it; scripts/ci-install-chromium installs
// the Debian package).
const EnvRequireBrowser = "OCEANWAY_REQUIRE_BROWSER"

// EnvChromium names the browser binary (default /usr/bin/chromium, else
// chromium on PATH).
const EnvChromium = "OCEANWAY_CHROMIUM"

// chromiumPath finds the Debian chromium binary, or skips (fails when
// EnvRequireBrowser=1).
func chromiumPath(t *testing.T) string {
	t.Helper()
	want := os.Getenv(EnvChromium)
	candidates := []string{want}
	if want == "" {
		want = "/usr/bin/chromium"
		candidates = []string{want, "chromium"}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (" + want + "): install it with scripts/ci-install-chromium (Debian package chromium)"
	if os.Getenv(EnvRequireBrowser) == "1" {
		t.Fatalf("%s, and %s=1 requires the browser test", msg, EnvRequireBrowser)
	}
	t.Skipf("%s; set %s=1 to make this a failure", msg, EnvRequireBrowser)
	return ""
}

// Smoke test in headless Chromium: the overview page served over HTTP
// renders the counts the test created, with no JavaScript on the page, and
// the lookup form works by a plain GET submit.
func TestBrowserOverviewShowsCounts(t *testing.T) {
	bin := chromiumPath(t)
	w := admintest.NewWorld(t)
	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{}))
	t.Cleanup(srv.Close)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	// The first action starts the browser and binds it to browser's
	// lifetime; the timeout applies to the steps after it only.
	require.NoError(t, chromedp.Do(browser), "start %s", bin)
	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	defer cancel()

	text := func(css string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
		require.NoError(t, err, css)
		return strings.TrimSpace(v)
	}
	eval := func(js string) int {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		require.NoError(t, err, js)
		return v
	}
	cell := func(boundary, destination, field string) string {
		return `tr[data-boundary="` + boundary + `"][data-destination="` + destination + `"] td[data-field="` + field + `"]`
	}

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("deliveries")),
	))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Contains(t, title, "Outbox overview")

	var got []string
	for _, f := range []string{"pending", "leased", "acknowledged", "quarantined", "total"} {
		got = append(got, text(cell("core", "core_operations", f)))
	}
	require.Equal(t, []string{"1", "1", "1", "1", "4"}, got, "core/core_operations pending, leased, acknowledged, quarantined, total")
	require.Equal(t, "1", text(cell("execution", "metering_input_processor", "pending")))
	require.Equal(t, "5", text(cell("all", "all", "total")))
	require.Equal(t, "digest_conflict: "+admintest.HostileReason, text(`tr[data-event-id="`+w.QuarantinedEvent+`"] td.reason`),
		"the hostile reason renders as text")
	require.Contains(t, text("#read-only-notice"), "no skip, force-success, edit-payload or replay action")
	require.Zero(t, eval(`document.querySelectorAll('script').length`), "the page works without JavaScript and carries none")
	require.Zero(t, eval(`Array.from(document.forms).filter(f => f.method.toLowerCase() !== 'get').length`), "no form can change state")
	color, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('`+cell("core", "core_operations", "quarantined")+`')).color`))
	require.NoError(t, err)
	require.Equal(t, "rgb(207, 34, 46)", color, "the stylesheet loaded")

	// The lookup form, submitted like a user would (plain GET, no
	// JavaScript on the page): a run id shows its events and attempts.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("lookup-id"), w.RunA),
		chromedp.SetValue(chromedp.ID("lookup-kind"), "run"),
		chromedp.Submit(chromedp.ID("lookup-id")),
		chromedp.WaitVisible(chromedp.ID("result")),
	))
	require.Contains(t, text("#result h2"), "3 events for run "+w.RunA)
	require.Equal(t, "non_retryable", text(`article[data-event-id="`+w.QuarantinedEvent+`"] tr[data-attempt="2"] td[data-field="outcome"]`))
}
