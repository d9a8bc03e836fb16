package admin_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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

// newBrowser starts headless Chromium (bin) for the test and returns a
// context bound to it whose steps time out after 90 seconds.
func newBrowser(t *testing.T, bin string) context.Context {
	t.Helper()
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
		chromedp.WindowSize(1440, 1000),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	// The first action starts the browser and binds it to browser's
	// lifetime; the timeout applies to the steps after it only.
	require.NoError(t, chromedp.Do(browser), "start %s", bin)
	ctx, cancel := context.WithTimeout(browser, 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Smoke test in headless Chromium: the overview page served over HTTP
// renders the counts the test created, with no JavaScript on the page, and
// the lookup form works by a plain GET submit.
func TestBrowserOverviewShowsCounts(t *testing.T) {
	bin := chromiumPath(t)
	w := admintest.NewWorld(t)
	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{}))
	t.Cleanup(srv.Close)

	ctx := newBrowser(t, bin)

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

// EnvArtifactsDir names the directory the browser test saves its screenshot
// to (CI uploads it as an artifact); t.TempDir() when unset.
const EnvArtifactsDir = "OCEANWAY_ARTIFACTS_DIR"

// OBS-4, issue 36 item 5: in headless Chromium the overview shows the money
// of a world with a reservation waiting for reconciliation, an open
// exposure and a blocked Metering Work — each section's heading and
// numbers — and the waiting reservation's link leads to its lookup. The
// full page is saved as admin-overview.png (the CI artifact).
func TestBrowserOverviewShowsTheMoney(t *testing.T) {
	bin := chromiumPath(t)
	w := admintest.NewMoneyWorld(t)
	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{}))
	t.Cleanup(srv.Close)
	ctx := newBrowser(t, bin)

	text := func(css string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
		require.NoError(t, err, css)
		return strings.TrimSpace(v)
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("blocked-work")),
	))
	for id, heading := range map[string]string{
		"reservations": "Reservations by state", "ledger": "Ledger totals", "exposures": "Open late settlement exposures",
		"cases": "Open cases", "blocked-work": "Blocked Work (Metering)",
	} {
		require.Equal(t, heading, text("#"+id+" h2"))
	}
	require.Equal(t, "2", text(`#reservations td[data-field="stillReserved"]`))
	require.Equal(t, "1", text(`#reservations td[data-field="settled"]`))
	waiting := `#reservations tr[data-reason="` + admintest.WaitingReason + `"]`
	require.Equal(t, "1", text(waiting+` td[data-field="count"]`))
	require.Equal(t, w.Waiting.BillingReservationID, text(waiting+` td[data-field="oldestReservation"]`))
	require.Equal(t, "balanced", text(`#ledger [data-field="ledgerBadge"]`))
	require.Equal(t, "265", text(`#ledger td[data-field="debit"]`))
	require.Equal(t, "265", text(`#ledger td[data-field="credit"]`))
	require.Equal(t, "65", text(`#ledger td[data-field="held"]`))
	require.Equal(t, "1", text(`#exposures [data-field="exposuresOpen"]`))
	require.Equal(t, admintest.ExposureAmount, text(`#exposures [data-field="exposuresAmount"]`))
	require.Equal(t, w.Settled.BillingReservationID, text(`#exposures tr[data-exposure-ref="`+w.ExposureRef+`"] td[data-field="reservation"]`))
	require.Contains(t, text(`#cases [data-field="casesNote"]`), "listed on the Cases page")
	require.Equal(t, "1", text(`#cases [data-field="waitingForReconciliation"]`))
	require.Equal(t, "1", text(`#blocked-work tr[data-lane="`+admintest.BlockedLane+`"] td[data-field="blocked"]`))
	require.Equal(t, admintest.BlockedStage+": "+admintest.BlockedReason,
		text(`#blocked-work tr[data-work-ref="`+w.BlockedWorkRef+`"] td[data-field="reason"]`))
	color, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('[data-field="ledgerBadge"]')).color`))
	require.NoError(t, err)
	require.Equal(t, "rgb(26, 127, 55)", color, "the balanced badge is styled")

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv(EnvArtifactsDir)
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "admin-overview.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", path, len(png))

	// The oldest waiting reservation links to its exact-id lookup.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(waiting+` td[data-field="oldestReservation"] a`)),
		chromedp.WaitVisible(chromedp.ID("result")),
	))
	require.Equal(t, "awaiting_finalization", text(`[data-field="fenceState"]`))
}
