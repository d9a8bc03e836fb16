package admin_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
)

type client struct {
	t     *testing.T
	base  string
	token string
}

func newServer(t *testing.T, w *admintest.World, cfg admin.HandlerConfig) *client {
	t.Helper()
	srv := httptest.NewServer(admin.NewHandler(w.Reader, cfg))
	t.Cleanup(srv.Close)
	return &client{t: t, base: srv.URL + cfg.BasePath, token: cfg.Token}
}

func (c *client) do(method, path string) (int, http.Header, string) {
	c.t.Helper()
	return admintest.Do(c.t, method, c.base+path, c.token)
}

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	status, _, body := c.do(http.MethodGet, path)
	return status, body
}

func (c *client) getJSON(path string, wantStatus int, v any) {
	c.t.Helper()
	status, hdr, body := c.do(http.MethodGet, path)
	require.Equal(c.t, wantStatus, status, body)
	require.Equal(c.t, "application/json; charset=utf-8", hdr.Get("Content-Type"))
	require.NoError(c.t, json.Unmarshal([]byte(body), v), body)
}

// cell returns the number in the cell data-field=field of the counts row
// of boundary/destination.
func cell(t *testing.T, page, boundary, destination, field string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-boundary="` + boundary + `" data-destination="` + destination + `">(.*?)</tr>`).FindStringSubmatch(page)
	require.NotNil(t, row, "no row %s/%s", boundary, destination)
	m := regexp.MustCompile(`data-field="` + field + `"[^>]*>([^<]*)<`).FindStringSubmatch(row[1])
	require.NotNil(t, m, "no field %s in row %s/%s", field, boundary, destination)
	return m[1]
}

func TestOverviewPageShowsCountsQuarantinesAndDefinitions(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := newServer(t, w, admin.HandlerConfig{})
	status, hdr, page := c.do(http.MethodGet, "/")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'")
	require.Equal(t, "no-store", hdr.Get("Cache-Control"))

	for field, want := range map[string]string{"pending": "1", "leased": "1", "acknowledged": "1", "quarantined": "1", "total": "4", "retrying": "0"} {
		require.Equal(t, want, cell(t, page, "core", "core_operations", field), field)
	}
	require.NotEqual(t, "—", cell(t, page, "core", "core_operations", "oldestPending"))
	require.Equal(t, "0", cell(t, page, "core", "billing_finalization_coordinator", "total"))
	require.Equal(t, "—", cell(t, page, "core", "billing_finalization_coordinator", "oldestPending"))
	require.Equal(t, "1", cell(t, page, "execution", "metering_input_processor", "pending"))
	require.Equal(t, "2", cell(t, page, "all", "all", "pending"))
	require.Equal(t, "5", cell(t, page, "all", "all", "total"))

	// Recent quarantine with its reason, escaped.
	require.Contains(t, page, `data-event-id="`+w.QuarantinedEvent+`"`)
	require.Contains(t, page, html.EscapeString("digest_conflict: "+admintest.HostileReason))
	require.NotContains(t, page, "<script")
	require.NotContains(t, page, "<img")
	require.Regexp(t, `data-field="quarantineTotal">1<`, page)

	// Definitions: active version 1 in both boundaries, 14 members.
	require.Regexp(t, `(?s)<tr data-boundary="core" data-version="1" class="active">.*?data-field="members">14<`, page)
	require.Regexp(t, `(?s)<tr data-boundary="execution" data-version="1" class="active">`, page)

	// The read-only notice, and no form that could post anything.
	require.Contains(t, page, "no skip, force-success, edit-payload or replay action")
	require.NotRegexp(t, `(?i)method="post"`, page)
	require.Contains(t, page, `<form class="lookup" method="get" action="/lookup">`)

	// The stylesheet is served (and is the only sub-resource).
	status, hdr, _ = c.do(http.MethodGet, "/static/admin.css")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, hdr.Get("Content-Type"), "text/css")
}

func TestJSONEndpointsMatchTheWorld(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := newServer(t, w, admin.HandlerConfig{})

	var o admin.Overview
	c.getJSON("/api/overview", http.StatusOK, &o)
	require.Equal(t, int64(4), countsOf(t, o.Deliveries, "core", "core_operations").Total)
	require.Len(t, o.Quarantine.Items, 1)
	require.Equal(t, "digest_conflict: "+admintest.HostileReason, o.Quarantine.Items[0].Reason)
	require.Len(t, o.Definitions, 2)

	var d admin.DeliveriesResult
	c.getJSON("/api/deliveries", http.StatusOK, &d)
	core := countsOf(t, d.Deliveries, "core", "core_operations")
	require.Equal(t, [4]int64{1, 1, 1, 1}, [4]int64{core.Pending, core.Leased, core.Acknowledged, core.Quarantined})

	var q admin.QuarantineResult
	c.getJSON("/api/quarantine", http.StatusOK, &q)
	require.Equal(t, int64(1), q.Quarantine.Total)
	require.Equal(t, w.QuarantinedEvent, q.Quarantine.Items[0].EventID)

	var defs admin.DefinitionsResult
	c.getJSON("/api/definitions", http.StatusOK, &defs)
	require.Equal(t, "active", defs.Definitions[0].Status)
	require.Equal(t, 14, defs.Definitions[0].MemberCount)

	var comp admin.CompletenessResult
	c.getJSON("/api/completeness", http.StatusOK, &comp)
	require.Equal(t, admin.VerdictIncomplete, comp.Outbox[0].Verdict)

	// The raw JSON escapes markup too (a browser opening the API never
	// sees a tag).
	_, raw := c.get("/api/quarantine")
	require.NotContains(t, raw, "<script")
	require.Contains(t, raw, `\u003cscript\u003e`)

	var e struct{ Error, Code string }
	c.getJSON("/api/nope", http.StatusNotFound, &e)
	require.Equal(t, "not_found", e.Code)
}

func TestLookupPagesShowEventDeliveriesAndAttemptHistory(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := newServer(t, w, admin.HandlerConfig{})

	// By event id: the quarantined event with both attempts.
	status, page := c.get("/lookup?kind=event&id=" + w.QuarantinedEvent)
	require.Equal(t, http.StatusOK, status, page)
	require.Contains(t, page, `<article class="event" data-event-id="`+w.QuarantinedEvent+`" data-boundary="core">`)
	require.Regexp(t, `(?s)<tr data-attempt="1">.*?data-field="outcome">retryable<.*?retry_scheduled.*?consumer_busy`, page)
	require.Regexp(t, `(?s)<tr data-attempt="2">.*?data-field="outcome">non_retryable<.*?quarantined.*?digest_conflict`, page)
	require.Contains(t, page, `data-field="quarantineReason">`+html.EscapeString("digest_conflict: "+admintest.HostileReason)+`<`)
	require.NotContains(t, page, "<script")
	require.Contains(t, page, `data-field="envelopeDigest">jcs-sha256-v1:`)
	require.Contains(t, page, `&#34;eventId&#34;: &#34;`+w.QuarantinedEvent+`&#34;`, "the envelope, escaped")
	require.Regexp(t, `data-field="publishedAt">—<`, page)

	// By run id: three events in two boundaries, in creation order.
	status, page = c.get("/lookup?kind=run&id=" + w.RunA)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "3 events for run")
	for _, id := range []string{w.AckedEvent, w.QuarantinedEvent, w.ExecutionEvent} {
		require.Contains(t, page, `data-event-id="`+id+`"`)
	}
	require.Less(t, strings.Index(page, w.AckedEvent), strings.Index(page, w.QuarantinedEvent))
	require.Regexp(t, `(?s)data-event-id="`+w.AckedEvent+`".*?data-field="outcome">acknowledged<`, page)
	require.NotContains(t, page, w.LeasedEvent, "run C is not part of run A")

	// By reservation id (kind any): the same three.
	status, page = c.get("/lookup?id=" + w.Res)
	require.Equal(t, http.StatusOK, status)
	for _, id := range []string{w.AckedEvent, w.QuarantinedEvent, w.ExecutionEvent} {
		require.Contains(t, page, `data-event-id="`+id+`"`)
	}

	// The in-flight attempt is shown as such.
	_, page = c.get("/lookup?kind=event&id=" + w.LeasedEvent)
	require.Regexp(t, `(?s)<tr data-attempt="1">.*?data-field="outcome">in flight / unfinished<`, page)

	// JSON: the same history.
	var res admin.LookupResult
	c.getJSON("/api/lookup?kind=reservation&id="+w.Res, http.StatusOK, &res)
	require.ElementsMatch(t, []string{w.AckedEvent, w.QuarantinedEvent, w.ExecutionEvent}, eventIDs(res.Events))
	for _, e := range res.Events {
		if e.EventID == w.QuarantinedEvent {
			require.Len(t, e.Deliveries[0].Attempts, 2)
			require.Contains(t, e.Envelope, `"billingReservationId":"`+w.Res+`"`)
		}
	}

	// The bare form.
	status, page = c.get("/lookup")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `<input id="lookup-id" name="id"`)
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := newServer(t, w, admin.HandlerConfig{})

	hostile := `"><script>alert(1)</script>`
	status, page := c.get("/lookup?kind=run&id=" + url.QueryEscape(hostile))
	require.Equal(t, http.StatusBadRequest, status)
	require.NotContains(t, page, "<script")
	require.Contains(t, page, `id="lookup-error"`)
	require.Contains(t, page, "is not an exact UUID")
	require.Contains(t, page, `value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`, "the form keeps the input, escaped")

	var e struct{ Error, Code string }
	c.getJSON("/api/lookup?kind=event&id=nope", http.StatusBadRequest, &e)
	require.Equal(t, "invalid_id", e.Code)
	c.getJSON("/api/lookup?kind=sideways&id="+w.AckedEvent, http.StatusBadRequest, &e)
	require.Equal(t, "unknown_kind", e.Code)
	c.getJSON("/api/lookup", http.StatusBadRequest, &e)
	require.Equal(t, "missing_id", e.Code)

	var res admin.LookupResult
	c.getJSON("/api/lookup?id=00000000-0000-0000-0000-000000000000", http.StatusNotFound, &res)
	require.Empty(t, res.Events)
	status, page = c.get("/lookup?kind=event&id=00000000-0000-0000-0000-000000000000")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, page, `id="not-found"`)
}

func TestBearerTokenIsEnforced(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	const token = "s3cret-token"
	c := newServer(t, w, admin.HandlerConfig{Token: token})
	anon := &client{t: t, base: c.base}
	wrong := &client{t: t, base: c.base, token: "s3cret-tokem"}

	for _, path := range []string{"/", "/lookup?kind=event&id=" + w.AckedEvent, "/completeness", "/api/overview", "/api/lookup?id=" + w.RunA, "/static/admin.css", "/nope"} {
		status, hdr, body := anon.do(http.MethodGet, path)
		require.Equal(t, http.StatusUnauthorized, status, path)
		require.Equal(t, `Bearer realm="oceanway-admin"`, hdr.Get("WWW-Authenticate"))
		require.NotContains(t, body, w.AckedEvent)
		status, _, _ = wrong.do(http.MethodGet, path)
		require.Equal(t, http.StatusUnauthorized, status, path)
	}
	// A scheme other than Bearer is refused.
	req, _ := http.NewRequest(http.MethodGet, c.base+"/api/overview", nil)
	req.Header.Set("Authorization", "Basic "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close() // the body was read; a close error changes no assertion
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	status, page := c.get("/")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "1", cell(t, page, "core", "core_operations", "acknowledged"))
	var o admin.Overview
	c.getJSON("/api/overview", http.StatusOK, &o)
}

func TestOnlyGetAndHeadAreAllowed(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	for _, token := range []string{"", "tok"} {
		c := newServer(t, w, admin.HandlerConfig{Token: token})
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			for _, path := range []string{"/", "/lookup", "/api/lookup?id=" + w.QuarantinedEvent, "/api/quarantine", "/api/replay", "/skip"} {
				status, hdr, body := c.do(method, path)
				require.Equal(t, http.StatusMethodNotAllowed, status, "%s %s", method, path)
				require.Equal(t, "GET, HEAD", hdr.Get("Allow"))
				require.Contains(t, body, "read-only")
			}
		}
		status, hdr, body := c.do(http.MethodHead, "/")
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, body)
		require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	}
	// Nothing changed.
	c := newServer(t, w, admin.HandlerConfig{})
	var d admin.DeliveriesResult
	c.getJSON("/api/deliveries", http.StatusOK, &d)
	core := countsOf(t, d.Deliveries, "core", "core_operations")
	require.Equal(t, [4]int64{1, 1, 1, 1}, [4]int64{core.Pending, core.Leased, core.Acknowledged, core.Quarantined})
}

func TestCompletenessPage(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := newServer(t, w, admin.HandlerConfig{})
	status, page := c.get("/completeness")
	require.Equal(t, http.StatusOK, status)
	require.Regexp(t, `(?s)<tr data-boundary="core">.*?data-field="verdict"[^>]*>incomplete<.*?open_mandatory_deliveries, quarantined_mandatory_deliveries`, page)
	require.Regexp(t, `(?s)<tr data-boundary="core" data-destination="core_operations">\s*<td>core</td><td>core_operations</td><td class="n">4</td><td class="n">2</td>`, page)
	require.Contains(t, page, `data-field="verificationState">unverified<`)
	require.Contains(t, page, `data-field="verificationReason">no_completed_snapshot<`)
}

func TestMountedUnderBasePath(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	mux := http.NewServeMux()
	h := admin.NewHandler(w.Reader, admin.HandlerConfig{BasePath: "/admin"})
	mux.Handle("/admin/", h)
	mux.Handle("/admin", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL}

	status, page := c.get("/admin/")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `href="/admin/static/admin.css"`)
	require.Contains(t, page, `action="/admin/lookup"`)
	require.Contains(t, page, `href="/admin/lookup?kind=event&amp;id=`+w.QuarantinedEvent+`"`)
	status, _ = c.get("/admin/api/overview")
	require.Equal(t, http.StatusOK, status)
	status, _ = c.get("/admin/static/admin.css")
	require.Equal(t, http.StatusOK, status)
	// /admin redirects to /admin/.
	status, page = c.get("/admin")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Deliveries by destination")

	// Behind http.StripPrefix (as oceanway serve mounts it): same links.
	mux = http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	stripped := httptest.NewServer(mux)
	t.Cleanup(stripped.Close)
	c = &client{t: t, base: stripped.URL}
	status, page = c.get("/admin/")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `action="/admin/lookup"`)
	status, page = c.get("/admin/lookup?kind=event&id=" + w.AckedEvent)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `data-event-id="`+w.AckedEvent+`"`)
	status, _ = c.get("/admin/static/admin.css")
	require.Equal(t, http.StatusOK, status)
}

func TestRefreshIsBounded(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	c := newServer(t, w, admin.HandlerConfig{})
	_, page := c.get("/?refresh=1")
	require.Contains(t, page, `<meta http-equiv="refresh" content="2">`)
	_, page = c.get("/?refresh=" + strconv.Itoa(1<<20))
	require.Contains(t, page, `<meta http-equiv="refresh" content="3600">`)
	_, page = c.get("/")
	require.NotContains(t, page, `http-equiv="refresh"`)
}

func TestNoBoundaryReadableIs503(t *testing.T) {
	t.Parallel()
	r := admin.NewReader(admin.Boundaries{}, admin.Config{})
	srv := httptest.NewServer(admin.NewHandler(r, admin.HandlerConfig{}))
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL}
	status, page := c.get("/")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, page, "No boundary databases are configured.")
}
