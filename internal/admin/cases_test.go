package admin_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
)

func caseRefs(cs []admin.Case) []string {
	refs := make([]string, len(cs))
	for i, c := range cs {
		refs[i] = c.CaseRef
	}
	return refs
}

func requestRefs(rs []admin.CaseRequest) []string {
	refs := make([]string, len(rs))
	for i, r := range rs {
		refs[i] = r.RequestRef
	}
	return refs
}

// requireWorldCases checks a Cases answer against the case world: the open
// cases first, oldest first, each with its command chain; then the resolved
// ones, most recently resolved first, with resolution time, actor and
// operation; never a case of a projection version that is not active.
func requireWorldCases(t *testing.T, w *admintest.CaseWorld, c admin.CasesResult) {
	t.Helper()
	require.True(t, c.Readable(), "%+v", c.SectionStatus)
	require.Equal(t, "core", c.Boundary)
	require.Equal(t, w.Bundle.Prefix+"_core", c.Database)
	require.Equal(t, "operations_read_model@1", c.Projection)
	require.Equal(t, admin.HowCasesClose, c.HowCasesClose)
	require.Contains(t, c.HowCasesClose, "oceanway case request|approve|apply")

	require.Equal(t, int64(2), c.OpenTotal)
	require.Equal(t, []string{w.Open.Ref, w.NewOpen.Ref}, caseRefs(c.Open.Items), "open cases, oldest first")
	require.False(t, c.Open.Truncated)
	require.Equal(t, admin.DefaultCaseListLimit, c.Open.Limit)
	open := c.Open.Items[0]
	require.Equal(t, admin.Case{CaseRef: w.Open.Ref, Generation: 2, State: "open", FenceID: w.Open.FenceID,
		ReservationID: w.Open.ReservationID, RunID: w.Open.RunID, ReasonCode: admintest.CaseReason,
		PredecessorCaseRef: w.Resolved.Ref, RequestedAt: w.Open.RequestedAt, AgeSeconds: open.AgeSeconds,
		Requests: open.Requests}, open)
	require.InDelta(t, 50*60, open.AgeSeconds, 120, "the request's age at the snapshot")
	require.Equal(t, []string{w.Approved.Ref, w.Requested.Ref}, requestRefs(open.Requests), "requests in order")
	approved, requested := open.Requests[0], open.Requests[1]
	require.Equal(t, admin.StageApproved, approved.Stage())
	require.Equal(t, admintest.Alice, approved.Requester)
	require.Equal(t, admintest.Bob, approved.Approver)
	require.Equal(t, w.Approved.ApprovalRef, approved.ApprovalRef)
	require.NotNil(t, approved.ApprovedAt)
	require.Equal(t, admintest.HostileReason, approved.Justification)
	require.Empty(t, approved.DecisionRef)
	require.Nil(t, approved.DecidedAt)
	require.Equal(t, admin.StageRequested, requested.Stage())
	require.Equal(t, admintest.Carol, requested.Requester)
	require.Empty(t, requested.Approver)
	require.Nil(t, requested.ApprovedAt)
	newOpen := c.Open.Items[1]
	require.Equal(t, int64(1), newOpen.Generation)
	require.Empty(t, newOpen.PredecessorCaseRef)
	require.NotNil(t, newOpen.Requests)
	require.Empty(t, newOpen.Requests)
	require.Nil(t, newOpen.ResolvedAt)

	require.Equal(t, []string{w.Resolved.Ref, w.EarlierResolved.Ref}, caseRefs(c.Resolved.Items), "resolved, most recent first")
	require.False(t, c.Resolved.Truncated)
	resolved := c.Resolved.Items[0]
	require.Equal(t, "resolved", resolved.State)
	require.Equal(t, int64(1), resolved.Generation)
	require.Equal(t, w.Resolved.ReservationID, resolved.ReservationID)
	require.NotNil(t, resolved.ResolvedAt)
	require.True(t, w.Resolved.ResolvedAt.Equal(*resolved.ResolvedAt), "%v", resolved.ResolvedAt)
	require.Equal(t, admintest.Alice, resolved.ResolvedBy)
	require.Equal(t, w.Resolved.ResolutionOperationID, resolved.ResolutionOperationID)
	require.Len(t, resolved.Requests, 1)
	applied := resolved.Requests[0]
	require.Equal(t, admin.StageDecided, applied.Stage())
	require.Equal(t, w.Applied.Ref, applied.RequestRef)
	require.Equal(t, admintest.Bob, applied.Approver)
	require.Equal(t, w.Applied.DecisionRef, applied.DecisionRef)
	require.Equal(t, admintest.Alice, applied.DecidedBy, "the requester applies")
	require.NotNil(t, applied.DecidedAt)
	earlier := c.Resolved.Items[1]
	require.Equal(t, admintest.Dave, earlier.ResolvedBy)
	require.Equal(t, []string{w.EarlierApplied.Ref}, requestRefs(earlier.Requests))

	for _, cs := range [][]admin.Case{c.Open.Items, c.Resolved.Items} {
		require.NotContains(t, caseRefs(cs), w.Stale.Ref, "a case of a version that is not active")
	}
	require.False(t, c.RequestsTruncated)
}

// Issue 31 item 6: the Cases read lists the open cases first with their
// command chain, then the resolved ones, from the active projection.
func TestCasesListOpenFirstWithTheirChain(t *testing.T) {
	t.Parallel()
	w := admintest.NewCaseWorld(t)
	requireWorldCases(t, w, w.Reader.Cases(t.Context()))
}

// Issue 31 item 6: the Cases page and /api/cases show the same cases,
// linked from the navigation, read-only: no form, no button, and the page
// says a case closes only through `oceanway case request|approve|apply`.
func TestCasesPageAndAPI(t *testing.T) {
	t.Parallel()
	w := admintest.NewCaseWorld(t)
	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{BasePath: "/admin"}))
	t.Cleanup(srv.Close)

	status, hdr, page := admintest.Do(t, http.MethodGet, srv.URL+"/admin/cases", "")
	require.Equal(t, http.StatusOK, status, page)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	require.Contains(t, page, `<a href="/admin/cases" aria-current="page">Cases</a>`)
	require.Contains(t, page, `<a href="/admin/api/cases">cases</a>`)
	require.Contains(t, page, `data-field="howCasesClose">`+html.EscapeString(admin.HowCasesClose)+`<`)
	require.Contains(t, page, `<code data-field="projection">operations_read_model@1</code>`)
	require.Contains(t, page, `data-field="openTotal">2<`)

	// No way to write: no form, no button, no script, nothing but GET.
	for _, tag := range []string{"<form", "<button", "<input", "<script", "<img"} {
		require.NotContains(t, page, tag)
	}
	require.NotRegexp(t, `(?i)method=`, page)

	// Open first, then resolved; the stale version's case nowhere.
	openAt, resolvedAt := strings.Index(page, `id="open-cases-table"`), strings.Index(page, `id="resolved-cases-table"`)
	require.Positive(t, openAt)
	require.Less(t, openAt, resolvedAt)
	pos := func(ref string) int {
		i := strings.Index(page, `<tr data-case-ref="`+ref+`"`)
		require.Positive(t, i, ref)
		return i
	}
	require.Less(t, openAt, pos(w.Open.Ref))
	require.Less(t, pos(w.Open.Ref), pos(w.NewOpen.Ref))
	require.Less(t, resolvedAt, pos(w.Resolved.Ref))
	require.Less(t, pos(w.Resolved.Ref), pos(w.EarlierResolved.Ref))
	require.NotContains(t, page, w.Stale.Ref)

	row := func(ref string) string {
		m := regexp.MustCompile(`(?s)<tr data-case-ref="` + regexp.QuoteMeta(ref) + `" data-state="[a-z]+">(.*?)</tr>\s*(?:<tr data-case-ref|<tr><td colspan|</tbody>\s*</table>\s*(?:<p|<h3|</section>))`).FindStringSubmatch(page)
		require.NotNil(t, m, "no row for %s", ref)
		return m[1]
	}
	open := row(w.Open.Ref)
	for _, want := range []string{
		`data-field="generation">2<`, `<code data-field="predecessor">` + w.Resolved.Ref + `</code>`,
		`href="/admin/lookup?kind=reservation&amp;id=` + w.Open.ReservationID + `"`,
		`href="/admin/lookup?kind=run&amp;id=` + w.Open.RunID + `"`,
		`data-field="reason"><code>` + admintest.CaseReason + `</code>`,
		`<tr data-request-ref="` + w.Approved.Ref + `" data-stage="approved">`,
		`<tr data-request-ref="` + w.Requested.Ref + `" data-stage="requested">`,
		`data-field="requester">` + admintest.Alice + `<`, `data-field="approver">` + admintest.Bob + `<br>`,
		`data-field="requester">` + admintest.Carol + `<`, `awaiting approval by a second operator`, `not applied yet`,
		`data-field="justification">` + html.EscapeString(admintest.HostileReason) + `<`,
	} {
		require.Contains(t, open, want)
	}
	require.Regexp(t, `data-field="age">5\dm\d\ds<`, open)
	require.Contains(t, row(w.NewOpen.Ref), `data-field="chain">No request yet.<`)
	resolved := row(w.Resolved.Ref)
	for _, want := range []string{
		`data-field="resolvedBy">` + admintest.Alice + `<`,
		`data-field="resolutionOperation"><code>` + w.Resolved.ResolutionOperationID + `</code>`,
		`data-field="resolvedAt">` + w.Resolved.ResolvedAt.Format("2006-01-02 15:04:05.000000Z07:00") + `<`,
		`<tr data-request-ref="` + w.Applied.Ref + `" data-stage="decided">`,
		`<code>` + w.Applied.DecisionRef + `</code><br><span class="hint">by ` + admintest.Alice,
	} {
		require.Contains(t, resolved, want)
	}

	// The JSON carries the same cases, markup escaped.
	status, hdr, body := admintest.Do(t, http.MethodGet, srv.URL+"/admin/api/cases", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "application/json; charset=utf-8", hdr.Get("Content-Type"))
	require.NotContains(t, body, "<script")
	require.Contains(t, body, `"reconciliationCaseRef": "`+w.Open.Ref+`"`)
	var c admin.CasesResult
	require.NoError(t, json.Unmarshal([]byte(body), &c))
	requireWorldCases(t, w, c)

	// The overview's open-cases section points here.
	_, _, overview := admintest.Do(t, http.MethodGet, srv.URL+"/admin/", "")
	require.Contains(t, overview, `<a href="/admin/cases">Cases</a>`)
}

// Issue 31 item 6, OBS-4: the Cases page and its API refuse every method
// but GET and HEAD, and nothing changes.
func TestCasesRefuseWrites(t *testing.T) {
	t.Parallel()
	w := admintest.NewCaseWorld(t)
	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{}))
	t.Cleanup(srv.Close)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		for _, path := range []string{"/cases", "/api/cases", "/cases?ref=" + w.Open.Ref, "/api/cases/" + w.Open.Ref + "/approve"} {
			status, hdr, body := admintest.Do(t, method, srv.URL+path, "")
			require.Equal(t, http.StatusMethodNotAllowed, status, "%s %s", method, path)
			require.Equal(t, "GET, HEAD", hdr.Get("Allow"))
			require.Contains(t, body, "read-only")
		}
	}
	status, hdr, body := admintest.Do(t, http.MethodHead, srv.URL+"/cases", "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	requireWorldCases(t, w, w.Reader.Cases(t.Context()))
}

// The lists are bounded: at most CaseListLimit cases each, and at most
// CaseRequestLimit requests; each says it was cut.
func TestCasesListsAreBounded(t *testing.T) {
	t.Parallel()
	w := admintest.NewCaseWorld(t)
	c := admin.NewReader(w.Boundaries(), admin.Config{CaseListLimit: 1, CaseRequestLimit: 1}).Cases(t.Context())
	require.Empty(t, c.Error)
	require.Equal(t, int64(2), c.OpenTotal)
	require.Equal(t, []string{w.Open.Ref}, caseRefs(c.Open.Items))
	require.True(t, c.Open.Truncated)
	require.Equal(t, int64(1), c.OpenMore())
	require.Equal(t, 1, c.Open.Limit)
	require.Equal(t, []string{w.Resolved.Ref}, caseRefs(c.Resolved.Items))
	require.True(t, c.Resolved.Truncated)
	require.True(t, c.RequestsTruncated, "two cases listed, three requests, one read")

	srv := httptest.NewServer(admin.NewHandler(admin.NewReader(w.Boundaries(), admin.Config{CaseListLimit: 1}), admin.HandlerConfig{}))
	t.Cleanup(srv.Close)
	_, _, page := admintest.Do(t, http.MethodGet, srv.URL+"/cases", "")
	require.Contains(t, page, `data-field="openMore">Oldest 1 shown; 1 more.<`)
	require.Contains(t, page, `data-field="resolvedMore">The 1 most recently resolved are shown.<`)
}

// A core database that is not configured, has no case tables or no active
// Operations projection is an answer, not an error page; one that cannot
// be read is 503.
func TestCasesNotConfiguredNotInstalledUnreadable(t *testing.T) {
	t.Parallel()
	get := func(r *admin.Reader, path string) (int, string) {
		srv := httptest.NewServer(admin.NewHandler(r, admin.HandlerConfig{}))
		defer srv.Close()
		status, _, body := admintest.Do(t, http.MethodGet, srv.URL+path, "")
		return status, body
	}

	none := admin.NewReader(admin.Boundaries{}, admin.Config{})
	c := none.Cases(t.Context())
	require.Equal(t, admin.SectionStatus{Boundary: "core"}, c.SectionStatus)
	require.Empty(t, c.Open.Items)
	status, page := get(none, "/cases")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `Not configured: no <b>core</b> database is configured`)

	// The outbox line alone: no operations schema.
	bare := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	r := admin.NewReader(admin.Boundaries{"core": bare.Core()}, admin.Config{})
	c = r.Cases(t.Context())
	require.True(t, c.Configured)
	require.False(t, c.Installed)
	require.Empty(t, c.Error)
	status, page = get(r, "/cases")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `Not installed: the core database`)
	status, body := get(r, "/api/cases")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"installed": false`)

	// The operations line, but no projection bootstrapped.
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: admintest.Lines()})
	r = admin.NewReader(admin.Boundaries{"core": b.Core()}, admin.Config{})
	c = r.Cases(t.Context())
	require.True(t, c.Readable(), "%+v", c.SectionStatus)
	require.Empty(t, c.Projection)
	_, page = get(r, "/cases")
	require.Contains(t, page, `No Operations projection is active on this database`)

	// A database that does not exist.
	broken, err := pgxpool.New(t.Context(), db.WithDatabase(b.DSNs[boundary.Core], b.Prefix+"_missing"))
	require.NoError(t, err)
	t.Cleanup(broken.Close)
	r = admin.NewReader(admin.Boundaries{"core": broken}, admin.Config{})
	status, page = get(r, "/cases")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, page, `The core database could not be read`)
	status, _ = get(r, "/api/cases")
	require.Equal(t, http.StatusServiceUnavailable, status)
}
