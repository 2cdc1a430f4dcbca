package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardPath is the dashboard, in this package's directory.
const dashboardPath = "dynamo-go.json"

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *datasource     `json:"datasource"`
}

// readDashboard decodes the dashboard, refusing unknown JSON syntax but
// not unknown fields (Grafana has many).
func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return &d
}

// allPanels returns the panels and the panels of collapsed rows.
func (d *dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// queries returns every PromQL expression of the dashboard, with where it
// is: the panels' targets and the variables' label_values selectors.
func (d *dashboard) queries() map[string]string {
	q := map[string]string{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			q[tg.Expr] = "panel " + p.Title
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		if m := labelValuesRE.FindStringSubmatch(v.Definition); m != nil {
			q[m[1]] = "variable " + v.Name
		}
	}
	return q
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// builtinVariables are Grafana's own variables the queries may use.
var builtinVariables = []string{"__rate_interval", "__interval", "__range"}

var variableRE = regexp.MustCompile(`\$(?:\{(\w+)\}|(\w+))`)

// The dashboard is valid Grafana dashboard JSON: a title, uid and schema
// version; unique panel ids; panels that fit the 24-column grid, use the
// datasource variable and have queries; the datasource, job, instance and
// model variables; and no query using a variable it does not define.
func TestDashboardIsValid(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want all set, schema 36 or later", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds := vars["datasource"]; ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
		t.Errorf("variable datasource: type %q query %s, want a prometheus datasource variable", ds.Type, ds.Query)
	}
	for _, name := range []string{"job", "instance", "model"} {
		v, ok := vars[name]
		if !ok || v.Type != "query" || !labelValuesRE.MatchString(v.Definition) || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s: %+v, want a label_values query on ${datasource}", name, v)
		}
	}

	ids := map[int]string{}
	panels := d.allPanels()
	if len(panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range panels {
		if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
			t.Errorf("panel %q: id %d (already %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if p.Title == "" || p.Type == "" || g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %d %q: type %q gridPos %+v", p.ID, p.Title, p.Type, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %q with refId %q", p.Title, tg.Expr, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
	for q, where := range d.queries() {
		for _, m := range variableRE.FindAllStringSubmatch(q, -1) {
			name := m[1] + m[2]
			if _, ok := vars[name]; !ok && !slices.Contains(builtinVariables, name) {
				t.Errorf("%s: %q uses $%s, which is not defined", where, q, name)
			}
		}
	}
}

// promqlWords are the PromQL keywords, aggregations and functions the
// queries may contain besides metric names; a function is recognised by
// the '(' after it, these also without.
var promqlWords = []string{
	"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right",
	"sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile", "stddev", "stdvar", "group",
	"inf", "nan",
}

var (
	stringRE     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchersRE   = regexp.MustCompile(`\{[^}]*\}`)
	rangeRE      = regexp.MustCompile(`\[[^\]]*\]`)
	groupingRE   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRE      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	histSuffixes = []string{"_bucket", "_sum", "_count"}
)

// metricNames returns the metric names a PromQL expression selects: its
// identifiers that are neither keywords, functions (followed by '('),
// label names (in matchers and grouping clauses) nor inside strings or
// range brackets.
func metricNames(expr string) []string {
	s := stringRE.ReplaceAllString(expr, `""`)
	s = matchersRE.ReplaceAllString(s, " ")
	s = rangeRE.ReplaceAllString(s, " ")
	s = groupingRE.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range identRE.FindAllStringIndex(s, -1) {
		if i := loc[0]; i > 0 && strings.ContainsRune("0123456789.", rune(s[i-1])) {
			continue // the exponent of a number, or a duration's unit
		}
		word := s[loc[0]:loc[1]]
		if strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") || slices.Contains(promqlWords, strings.ToLower(word)) {
			continue
		}
		names = append(names, word)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`histogram_quantile(0.5, sum by (le, model) (rate(a_seconds_bucket{job=~"$job", x="by (y)"}[$__rate_interval])))`, []string{"a_seconds_bucket"}},
		{`sum(rate(a_sum{m=~"$m"}[5m])) / sum(rate(a_count[5m])) > bool 1e3`, []string{"a_sum", "a_count"}},
		{`count(up == 1) or vector(0)`, []string{"up"}},
		{`min by (instance) (b) * on (instance) group_left (c) d offset 5m`, []string{"b", "d"}},
		{`a_total{job="x"}`, []string{"a_total"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%s) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// checkDashboard checks that every metric the dashboard's queries select
// is registered by the frontend or the worker: by its name, or, for a
// histogram, by its name with _bucket, _sum or _count. A histogram's type
// comes from /metrics, or from the catalogue when it has no series in
// the test (the catalogue's check holds the two together).
func checkDashboard(t *testing.T, s *stack, rows []catalogueRow) {
	d := readDashboard(t)
	docTypes := catalogueTypes(rows)
	typeOf := func(name string) (string, bool) {
		for _, p := range []process{s.frontend, s.worker} {
			if m, ok := p[name]; ok {
				if m.typ != "" {
					return m.typ, true
				}
				return docTypes[name], true
			}
		}
		return "", false
	}
	used := 0
	for q, where := range d.queries() {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric", where, q)
		}
		for _, name := range names {
			used++
			typ, ok := typeOf(name)
			if ok {
				if typ == "histogram" {
					t.Errorf("%s: %q selects the histogram %s itself: use %s_bucket, _sum or _count", where, q, name, name)
				}
				continue
			}
			found := false
			for _, suffix := range histSuffixes {
				base, cut := strings.CutSuffix(name, suffix)
				if !cut {
					continue
				}
				if typ, ok := typeOf(base); ok {
					found = true
					if typ != "histogram" && !(typ == "summary" && suffix != "_bucket") {
						t.Errorf("%s: %q selects %s, but %s is a %s", where, q, name, base, typ)
					}
				}
			}
			if !found {
				t.Errorf("%s: %q selects %s, which neither the frontend nor the worker registers", where, q, name)
			}
		}
	}
	if used == 0 {
		t.Error("the dashboard selects no metric")
	}
}
