package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/*
var staticFS embed.FS

// HandlerConfig configures NewHandler.
type HandlerConfig struct {
	// Token, when non-empty, is required on every request as
	// "Authorization: Bearer <Token>" (compared in constant time); any other
	// request gets 401.
	Token string
	// BasePath is the path prefix the handler is reachable under, e.g.
	// "/admin"; every link starts with it. Mount it either directly,
	// mux.Handle("/admin/", h), or behind http.StripPrefix("/admin", h):
	// a request path that still starts with BasePath is stripped here, one
	// that does not is served as is. Empty means the root.
	BasePath string
	// Logger receives one line per request that failed on the server side
	// (default slog.Default()).
	Logger *slog.Logger
}

// Handler serves the read-only admin page and its JSON API. It answers GET
// and HEAD only: no route changes state (OBS-4).
//
// Pages (HTML, no JavaScript):
//
//	/                 overview: the money (reservations, ledger, exposures, cases, blocked Work),
//	                  counts, oldest pending age, recent quarantines, definitions
//	/lookup?id=&kind= lookup by exact event, run or reservation id
//	/completeness     outbox-side completeness per boundary
//	/cases            Finalization reconciliation cases (open first, then resolved)
//	                  with their command chain; they close only through `oceanway case`
//
// JSON (same data):
//
//	/api/overview  /api/money  /api/deliveries  /api/quarantine  /api/definitions
//	/api/lookup?id=&kind=  /api/completeness  /api/cases
type Handler struct {
	reader    *Reader
	tokenHash [sha256.Size]byte
	hasToken  bool
	base      string
	log       *slog.Logger
	pages     map[string]*template.Template
	mux       *http.ServeMux
}

var _ http.Handler = (*Handler)(nil)

// NewHandler builds the admin handler over reader.
func NewHandler(reader *Reader, cfg HandlerConfig) *Handler {
	h := &Handler{
		reader: reader,
		base:   strings.TrimRight(cfg.BasePath, "/"),
		log:    cfg.Logger,
		pages:  parsePages(),
		mux:    http.NewServeMux(),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if cfg.Token != "" {
		h.hasToken = true
		h.tokenHash = sha256.Sum256([]byte(cfg.Token))
	}
	static, _ := fs.Sub(staticFS, "static")
	h.mux.Handle("/static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("/{$}", h.overviewPage)
	h.mux.HandleFunc("/lookup", h.lookupPage)
	h.mux.HandleFunc("/completeness", h.completenessPage)
	h.mux.HandleFunc("/cases", h.casesPage)
	h.mux.HandleFunc("/api/overview", h.apiOverview)
	h.mux.HandleFunc("/api/deliveries", h.apiDeliveries)
	h.mux.HandleFunc("/api/quarantine", h.apiQuarantine)
	h.mux.HandleFunc("/api/definitions", h.apiDefinitions)
	h.mux.HandleFunc("/api/lookup", h.apiLookup)
	h.mux.HandleFunc("/api/completeness", h.apiCompleteness)
	h.mux.HandleFunc("/api/money", h.apiMoney)
	h.mux.HandleFunc("/api/cases", h.apiCases)
	h.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Error: "no such endpoint", Code: "not_found"})
	})
	return h
}

// ServeHTTP checks the token and the method, then routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if h.hasToken && !h.authorized(r) {
		hdr.Set("WWW-Authenticate", `Bearer realm="oceanway-admin"`)
		http.Error(w, "401 unauthorized: this admin page needs Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed: the admin page is read-only (no skip, force-success, edit-payload or replay)", http.StatusMethodNotAllowed)
		return
	}
	// Mounted under BasePath: strip it when the request still carries it;
	// a request without it was already stripped by the mounting mux
	// (http.StripPrefix), as `oceanway serve` does.
	if rest, ok := strings.CutPrefix(r.URL.Path, h.base); h.base != "" && ok && (rest == "" || rest[0] == '/') {
		if rest == "" {
			http.Redirect(w, r, h.base+"/", http.StatusFound)
			return
		}
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path, u.RawPath = rest, ""
		r2.URL = &u
		r = r2
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], h.tokenHash[:]) == 1
}

// --- JSON ---------------------------------------------------------------

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// readStatus is 503 when no boundary could be read, else 200: a partly
// readable set of boundaries is still answered, with each failed
// boundary's error in the body.
func readStatus(statuses []BoundaryStatus) int {
	if len(statuses) == 0 || len(Failed(statuses)) == len(statuses) {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

func (h *Handler) logFailures(r *http.Request, statuses []BoundaryStatus) {
	for _, s := range Failed(statuses) {
		h.log.Warn("admin read failed", "path", r.URL.Path, "boundary", s.Boundary, "err", s.Error)
	}
}

func (h *Handler) apiOverview(w http.ResponseWriter, r *http.Request) {
	o := h.reader.Overview(r.Context())
	h.logFailures(r, o.Boundaries)
	writeJSON(w, readStatus(o.Boundaries), o)
}

func (h *Handler) apiDeliveries(w http.ResponseWriter, r *http.Request) {
	o := h.reader.Deliveries(r.Context())
	h.logFailures(r, o.Boundaries)
	writeJSON(w, readStatus(o.Boundaries), o)
}

func (h *Handler) apiQuarantine(w http.ResponseWriter, r *http.Request) {
	o := h.reader.Quarantines(r.Context())
	h.logFailures(r, o.Boundaries)
	writeJSON(w, readStatus(o.Boundaries), o)
}

func (h *Handler) apiDefinitions(w http.ResponseWriter, r *http.Request) {
	o := h.reader.Definitions(r.Context())
	h.logFailures(r, o.Boundaries)
	writeJSON(w, readStatus(o.Boundaries), o)
}

// apiMoney answers the overview's money sections alone; a section whose
// boundary is not configured says so and is not an error (always 200).
func (h *Handler) apiMoney(w http.ResponseWriter, r *http.Request) {
	m := h.reader.Money(r.Context())
	for _, s := range []SectionStatus{m.Billing.SectionStatus, m.BlockedWork.SectionStatus} {
		if s.Error != "" {
			h.log.Warn("admin read failed", "path", r.URL.Path, "boundary", s.Boundary, "err", s.Error)
		}
	}
	writeJSON(w, http.StatusOK, m)
}

// cases reads the Cases page: 503 when the core database could not be
// read, else 200 (not configured and not installed are answers).
func (h *Handler) cases(r *http.Request) (CasesResult, int) {
	c := h.reader.Cases(r.Context())
	if c.Error != "" {
		h.log.Warn("admin read failed", "path", r.URL.Path, "boundary", c.Boundary, "err", c.Error)
		return c, http.StatusServiceUnavailable
	}
	return c, http.StatusOK
}

func (h *Handler) apiCases(w http.ResponseWriter, r *http.Request) {
	c, status := h.cases(r)
	writeJSON(w, status, c)
}

func (h *Handler) apiCompleteness(w http.ResponseWriter, r *http.Request) {
	o := h.reader.Completeness(r.Context())
	h.logFailures(r, o.Boundaries)
	writeJSON(w, readStatus(o.Boundaries), o)
}

func (h *Handler) apiLookup(w http.ResponseWriter, r *http.Request) {
	res, status, err := h.lookup(r)
	if err != nil {
		writeJSON(w, status, apiError{Error: err.Error(), Code: errorCode(err)})
		return
	}
	writeJSON(w, status, res)
}

func errorCode(err error) string {
	switch {
	case errors.Is(err, ErrInvalidID):
		return "invalid_id"
	case errors.Is(err, ErrUnknownKind):
		return "unknown_kind"
	case errors.Is(err, errMissingID):
		return "missing_id"
	default:
		return "internal"
	}
}

var errMissingID = errors.New("admin: the id parameter is required")

// lookup runs the lookup of a request: 400 for a missing or malformed id
// or kind, 404 when nothing was found in readable boundaries, 503 when no
// boundary could be read.
func (h *Handler) lookup(r *http.Request) (LookupResult, int, error) {
	q := r.URL.Query()
	kind, err := ParseKind(q.Get("kind"))
	if err != nil {
		return LookupResult{}, http.StatusBadRequest, err
	}
	id := q.Get("id")
	if id == "" {
		return LookupResult{Kind: kind}, http.StatusBadRequest, errMissingID
	}
	res, err := h.reader.Lookup(r.Context(), kind, id)
	if err != nil {
		if errors.Is(err, ErrInvalidID) || errors.Is(err, ErrUnknownKind) {
			return LookupResult{Kind: kind}, http.StatusBadRequest, err
		}
		return LookupResult{}, http.StatusInternalServerError, err
	}
	h.logFailures(r, res.Boundaries)
	status := readStatus(res.Boundaries)
	if status == http.StatusOK && len(res.Events) == 0 {
		status = http.StatusNotFound
	}
	return res, status, nil
}

// --- HTML ---------------------------------------------------------------

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"ts":         formatTime,
		"tsp":        formatTimePtr,
		"age":        FormatAge,
		"prettyJSON": prettyJSON,
		"join":       strings.Join,
		"kinds":      func() []IDKind { return Kinds },
		"moneyView": func(base string, m Money) moneyView {
			return moneyView{Base: base, Money: m}
		},
		"waitingTotal": func(groups []WaitingGroup) int64 {
			var n int64
			for _, g := range groups {
				n += g.Count
			}
			return n
		},
		"form": func(base, kind, id string) lookupForm {
			return lookupForm{Base: base, Kind: IDKind(kind), ID: id}
		},
		"caseView": func(base string, c Case) caseView {
			return caseView{Base: base, Case: c}
		},
	}
	pages := map[string]*template.Template{}
	for _, page := range []string{"overview", "lookup", "completeness", "cases"} {
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
		pages[page] = t
	}
	return pages
}

// pageData is what every page template gets.
type pageData struct {
	Base    string
	Title   string
	Nav     string
	Refresh int
	Now     time.Time
	Token   bool
	Data    any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	refresh := 0
	if v, err := strconv.Atoi(r.URL.Query().Get("refresh")); err == nil && v > 0 {
		refresh = min(max(v, 2), 3600)
	}
	var buf bytes.Buffer
	err := h.pages[page].ExecuteTemplate(&buf, "layout", pageData{
		Base: h.base, Title: title, Nav: page, Refresh: refresh, Now: time.Now().UTC(), Token: h.hasToken, Data: data,
	})
	if err != nil {
		h.log.Error("admin render failed", "page", page, "err", err)
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// overviewView adds totals to the overview.
type overviewView struct {
	Overview
	Totals DestinationCounts
}

func (h *Handler) overviewPage(w http.ResponseWriter, r *http.Request) {
	o := h.reader.Overview(r.Context())
	h.logFailures(r, o.Boundaries)
	v := overviewView{Overview: o}
	for _, c := range o.Deliveries {
		v.Totals.Pending += c.Pending
		v.Totals.Retrying += c.Retrying
		v.Totals.Leased += c.Leased
		v.Totals.LeaseExpired += c.LeaseExpired
		v.Totals.Acknowledged += c.Acknowledged
		v.Totals.Quarantined += c.Quarantined
		v.Totals.Total += c.Total
		v.Totals.OldestPendingAgeSeconds = math.Max(v.Totals.OldestPendingAgeSeconds, c.OldestPendingAgeSeconds)
	}
	h.render(w, r, readStatus(o.Boundaries), "overview", "Outbox overview", v)
}

// moneyView is what the money sections of the overview get.
type moneyView struct {
	Base string
	Money
}

// lookupForm is what the lookup form template gets.
type lookupForm struct {
	Base string
	Kind IDKind
	ID   string
}

// caseView is what the cells of one case row get.
type caseView struct {
	Base string
	Case Case
}

// lookupView is the lookup form and its result.
type lookupView struct {
	Kind   IDKind
	ID     string
	Error  string
	Result *LookupResult
}

func (h *Handler) lookupPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := lookupView{Kind: IDKind(q.Get("kind")), ID: q.Get("id")}
	if v.Kind == "" {
		v.Kind = KindAny
	}
	if v.ID == "" && q.Get("kind") == "" {
		h.render(w, r, http.StatusOK, "lookup", "Lookup", v)
		return
	}
	res, status, err := h.lookup(r)
	if err != nil {
		if status == http.StatusInternalServerError {
			h.log.Error("admin lookup failed", "err", err)
			v.Error = "the lookup failed on the server; see the server log"
		} else {
			v.Error = err.Error()
		}
		h.render(w, r, status, "lookup", "Lookup", v)
		return
	}
	v.Result = &res
	h.render(w, r, status, "lookup", "Lookup "+string(res.Kind)+" "+res.ID, v)
}

func (h *Handler) completenessPage(w http.ResponseWriter, r *http.Request) {
	c := h.reader.Completeness(r.Context())
	h.logFailures(r, c.Boundaries)
	h.render(w, r, readStatus(c.Boundaries), "completeness", "Outbox completeness", c)
}

func (h *Handler) casesPage(w http.ResponseWriter, r *http.Request) {
	c, status := h.cases(r)
	h.render(w, r, status, "cases", "Finalization reconciliation cases", c)
}

// --- formatting ---------------------------------------------------------

const timeLayout = "2006-01-02 15:04:05.000000Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(timeLayout)
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return formatTime(*t)
}

// FormatAge renders an age in seconds compactly (850ms, 42s, 3m12s, 5h03m,
// 2d04h); 0 is "—".
func FormatAge(seconds float64) string {
	if seconds <= 0 {
		return "—"
	}
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// prettyJSON indents a JSON document for reading (whitespace only: member
// order and values are the stored ones).
func prettyJSON(raw string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(raw), "", "  "); err != nil {
		return raw
	}
	return buf.String()
}
