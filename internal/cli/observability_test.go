package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

// Issue 36 (items 2–4): the alert rules under deploy/prometheus and the
// Grafana dashboards under deploy/grafana are checked against the real
// thing. Rule files pass the validation Prometheus applies on load; every
// alert links a runbook section that exists; every metric an alert or a
// dashboard query names is exported by a real `oceanway serve` on a demo
// database (OBS-1), and no label of that scrape carries an id (OBS-2).

const (
	rulesGlob      = "../../deploy/prometheus/*.yml"
	dashboardsGlob = "../../deploy/grafana/*.json"
	repoRoot       = "../.."
)

// promExpr is one PromQL expression and where it comes from.
type promExpr struct {
	where, expr string
}

// loadRuleFiles parses every rule file as Prometheus does on load (strict
// fields, expressions and templates validated) and fails on any error.
func loadRuleFiles(t *testing.T) map[string]*rulefmt.RuleGroups {
	t.Helper()
	files, err := filepath.Glob(rulesGlob)
	require.NoError(t, err)
	require.NotEmpty(t, files, "no rule files under deploy/prometheus")
	out := map[string]*rulefmt.RuleGroups{}
	for _, f := range files {
		groups, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		require.Empty(t, errs, "%s does not load in Prometheus", f)
		out[filepath.Base(f)] = groups
	}
	return out
}

// ruleExprs lists the expression of every rule (alerts and recordings).
func ruleExprs(files map[string]*rulefmt.RuleGroups) []promExpr {
	var out []promExpr
	for name, groups := range files {
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				id := r.Alert
				if id == "" {
					id = r.Record
				}
				out = append(out, promExpr{where: name + " " + g.Name + "/" + id, expr: r.Expr})
			}
		}
	}
	return out
}

// dashboardExprs lists the expr of every target of every dashboard (panels
// nested in rows included), each dashboard having at least one.
func dashboardExprs(t *testing.T) []promExpr {
	t.Helper()
	files, err := filepath.Glob(dashboardsGlob)
	require.NoError(t, err)
	require.NotEmpty(t, files, "no dashboards under deploy/grafana")
	var out []promExpr
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(raw, &doc), f)
		before := len(out)
		var walk func(v any, title string)
		walk = func(v any, title string) {
			switch v := v.(type) {
			case map[string]any:
				if s, ok := v["title"].(string); ok {
					title = s
				}
				if e, ok := v["expr"].(string); ok {
					out = append(out, promExpr{where: filepath.Base(f) + " panel " + title, expr: grafanaRanges.Replace(e)})
				}
				for _, k := range sortedKeys(v) {
					walk(v[k], title)
				}
			case []any:
				for _, e := range v {
					walk(e, title)
				}
			}
		}
		walk(doc, "")
		require.Greater(t, len(out), before, "%s has no query", f)
	}
	return out
}

// grafanaRanges stands in for Grafana's built-in range variables, which
// Grafana substitutes before the query reaches Prometheus; any other $ is
// left for the parser to refuse (the dashboards use no other variable in a
// query).
var grafanaRanges = strings.NewReplacer(
	"${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m",
	"${__range}", "1h", "$__range", "1h")

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// selectorNames parses expr with the PromQL parser and returns the metric
// name of every vector selector in it. A selector without a literal metric
// name (a regular expression on __name__, labels only) is an error: the
// check could not vouch for it.
func selectorNames(p parser.Parser, expr string) ([]string, error) {
	node, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			bad = fmt.Errorf("selector %s names no metric literally", vs)
			return nil
		}
		names = append(names, name)
		return nil
	})
	return names, bad
}

// histogramSuffixes are the series suffixes of a histogram or summary
// family; a query names the series, the scrape the family.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// familyOf maps a series name to the exported family it belongs to.
func familyOf(name string, exported map[string]dto.MetricType) (string, bool) {
	if _, ok := exported[name]; ok {
		return name, true
	}
	for _, s := range histogramSuffixes {
		base, ok := strings.CutSuffix(name, s)
		if !ok {
			continue
		}
		switch exported[base] {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY:
			return base, true
		}
	}
	return "", false
}

// missingMetrics parses every expression and returns, per metric name not
// exported, where it is used (sorted); a parse failure is an error.
func missingMetrics(exprs []promExpr, exported map[string]dto.MetricType) (map[string][]string, error) {
	p := parser.NewParser(parser.Options{})
	missing := map[string][]string{}
	for _, e := range exprs {
		names, err := selectorNames(p, e.expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", e.where, e.expr, err)
		}
		for _, n := range names {
			if _, ok := familyOf(n, exported); !ok && !slices.Contains(missing[n], e.where) {
				missing[n] = append(missing[n], e.where)
			}
		}
	}
	for _, w := range missing {
		sort.Strings(w)
	}
	return missing, nil
}

func describeMissing(missing map[string][]string) string {
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "\n  %s (used by %s)", n, strings.Join(missing[n], "; "))
	}
	return b.String()
}

// headingSlugs returns the GitHub anchors of a Markdown file's headings
// (outside code fences): lower case, punctuation other than '-' and '_'
// dropped, spaces as '-', repeats numbered -1, -2, ...
func headingSlugs(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read only
	slugs := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127:
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			slugs[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			slugs[slug] = true
		}
		seen[slug]++
	}
	require.NoError(t, sc.Err())
	return slugs
}

var runbookURL = regexp.MustCompile(`^(docs/runbooks/[a-z0-9-]+\.md)#([a-z0-9_-]+)$`)

// issue 36 item 2: the rule files load as Prometheus loads them, and every
// alert has a severity, a summary, a description and a runbook_url naming a
// section of docs/runbooks/ that exists. No rule names a reconciliation
// case or grant metric (not built: issue 31).
func TestObservabilityRulesLoadAndLinkRunbooks(t *testing.T) {
	t.Parallel()
	files := loadRuleFiles(t)
	alerts := 0
	for name, groups := range files {
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				alerts++
				where := name + " " + g.Name + "/" + r.Alert
				require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s: labels.severity", where)
				require.NotEmpty(t, r.Annotations["summary"], "%s: annotations.summary", where)
				require.NotEmpty(t, r.Annotations["description"], "%s: annotations.description", where)
				m := runbookURL.FindStringSubmatch(r.Annotations["runbook_url"])
				require.NotNil(t, m, "%s: runbook_url %q is not docs/runbooks/<file>.md#<anchor>", where, r.Annotations["runbook_url"])
				path := filepath.Join(repoRoot, m[1])
				require.FileExists(t, path, "%s: runbook file", where)
				require.True(t, headingSlugs(t, path)[m[2]], "%s: %s has no heading with the anchor #%s", where, m[1], m[2])
			}
		}
	}
	require.Positive(t, alerts)
	p := parser.NewParser(parser.Options{})
	for _, e := range append(ruleExprs(files), dashboardExprs(t)...) {
		names, err := selectorNames(p, e.expr)
		require.NoError(t, err, "%s: %q", e.where, e.expr)
		for _, n := range names {
			require.False(t, strings.Contains(n, "_case") || strings.Contains(n, "grant"),
				"%s names %s: cases and grants are not built (issue 31)", e.where, n)
		}
	}
}

// idLabel matches label names that would carry an id (OBS-2).
func idLabel(name string) bool {
	switch name {
	case "organization", "org", "tenant", "workspace", "account", "user", "request", "trace", "span",
		"run", "step", "attempt", "reservation", "event", "provider_task", "dimension", "operation":
		return true
	}
	return strings.Contains(name, "_id") || strings.HasSuffix(name, "id")
}

var uuidValue = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// scrape GETs /metrics and parses it.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own loopback server
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	return tp.TextToMetricFamilies(resp.Body)
}

// issue 36 item 4, OBS-1, OBS-2: a real `oceanway serve` on a demo's
// databases exports every metric the alert rules and the dashboards name
// (histogram series counted by their family); no label of its scrape
// carries an id; and the check reports a rule naming a metric that does
// not exist (so it cannot pass by checking nothing).
func TestObservabilityQueriesNameExportedMetrics(t *testing.T) {
	// Not parallel: the demo runs every boundary's dispatchers, and two
	// demos at once exceed a shared server's default 100 connections.
	exprs := append(ruleExprs(loadRuleFiles(t)), dashboardExprs(t)...)

	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t) // its cleanup drops <prefix>_*
	var out, errOut strings.Builder
	code := Main([]string{"demo", "--runs", "20", "--plain", "--database-url", srv.URL, "--db-prefix", prefix},
		strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, "demo: %s%s", out.String(), errOut.String())

	addr := freeAddr(t)
	serveOut := startServe(t, "--database-url", srv.URL, "--db-prefix", prefix, "--listen", addr, "--poll", "100ms")
	url := "http://" + addr + "/metrics"

	var families map[string]*dto.MetricFamily
	var exported map[string]dto.MetricType
	// Scrape-time gauges exist from the first scrape; wait until the
	// dispatchers have run a claim round, then until nothing is missing
	// (a failure lists what the last scrape lacked).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		f, err := scrape(url)
		require.NoError(c, err)
		require.Contains(c, f, "oceanway_outbox_dispatcher_healthy", "serve: %s", serveOut.String())
		families = f
		exported = map[string]dto.MetricType{}
		for name, fam := range f {
			exported[name] = fam.GetType()
		}
		missing, err := missingMetrics(exprs, exported)
		require.NoError(c, err)
		if len(missing) > 0 {
			c.Errorf("names not exported by oceanway serve:%s", describeMissing(missing))
		}
	}, 45*time.Second, 500*time.Millisecond)

	// OBS-2: no label name is an id, no label value looks like one.
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				require.False(t, idLabel(l.GetName()), "%s has the label %q (OBS-2: no id in labels)", name, l.GetName())
				require.False(t, uuidValue.MatchString(l.GetValue()), "%s{%s=%q}: an id in a label value (OBS-2)", name, l.GetName(), l.GetValue())
			}
		}
	}

	// The check catches a name that does not exist, through the same
	// parse and the same function, against the same scrape.
	bogus := []byte(`groups:
  - name: self-check
    rules:
      - alert: NoSuchMetric
        expr: sum by (queue) (rate(oceanway_no_such_metric[5m])) > 0 and on () oceanway_outbox_dispatcher_healthy == 1
        labels: {severity: warning}
        annotations: {summary: s, description: d, runbook_url: docs/runbooks/README.md#oceanway-runbooks}
`)
	groups, errs := rulefmt.Parse(bogus, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	missing, err := missingMetrics(ruleExprs(map[string]*rulefmt.RuleGroups{"self-check.yml": groups}), exported)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"oceanway_no_such_metric": {"self-check.yml self-check/NoSuchMetric"}}, missing)
	_, err = missingMetrics([]promExpr{{where: "regex", expr: `{__name__=~"oceanway_.*"}`}}, exported)
	require.Error(t, err, "a selector without a literal name is refused, not waved through")
}
