package grafana

import (
	"bufio"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cataloguePath is the metrics catalogue, relative to this package.
const cataloguePath = "../../docs/observability.md"

// catalogueRow is one row of a metric table of the catalogue's Metrics
// section.
type catalogueRow struct {
	line    int
	section string   // the ### heading the table is under
	names   []string // metric names, or prefixes ending in '*'
	typ     string   // "counter", "gauge", "histogram", or "" for a pattern row
	labels  []string // sorted
}

// catalogueSections maps each ### heading of the Metrics section to the
// processes whose registries its tables describe.
var catalogueSections = map[string][]string{
	"Frontend":                {"frontend"},
	"Runtime (every process)": {"frontend", "worker"},
	"Workers":                 {"worker"},
	"Engine KV events":        {"kvevents"},
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readCatalogue reads the metric tables of the catalogue: the rows that
// start with a backticked name, under "## Metrics".
func readCatalogue(t *testing.T) []catalogueRow {
	t.Helper()
	f, err := os.Open(cataloguePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []catalogueRow
	inMetrics, section := false, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inMetrics = line == "## Metrics"
			continue
		case strings.HasPrefix(line, "### "):
			section = strings.TrimPrefix(line, "### ")
			continue
		}
		if !inMetrics || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Errorf("%s:%d: a metric row needs name, type, labels and meaning: %s", cataloguePath, n, line)
			continue
		}
		r := catalogueRow{line: n, section: section, typ: strings.TrimSpace(cells[2])}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			r.names = append(r.names, m[1])
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[3], -1) {
			r.labels = append(r.labels, m[1])
		}
		slices.Sort(r.labels)
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no metric rows under ## Metrics", cataloguePath)
	}
	return rows
}

// catalogueTypes returns the documented type of every named metric.
func catalogueTypes(rows []catalogueRow) map[string]string {
	types := map[string]string{}
	for _, r := range rows {
		for _, n := range r.names {
			if !strings.HasSuffix(n, "*") {
				types[n] = r.typ
			}
		}
	}
	return types
}

// checkCatalogue checks that the catalogue and the registries agree:
// every documented metric is registered by the processes of its section,
// with the documented labels and, where /metrics shows it, type; every
// registered metric is documented in a section of its process.
func checkCatalogue(t *testing.T, s *stack, rows []catalogueRow) {
	procs := map[string]process{"frontend": s.frontend, "worker": s.worker, "kvevents": s.kvevents}
	documented := map[string]map[string]bool{"frontend": {}, "worker": {}, "kvevents": {}}
	patterns := map[string][]string{}
	for _, r := range rows {
		where, ok := catalogueSections[r.section]
		if !ok {
			t.Errorf("%s:%d: section %q does not say which process serves it (catalogueSections)", cataloguePath, r.line, r.section)
			continue
		}
		for _, name := range r.names {
			for _, pn := range where {
				if prefix, ok := strings.CutSuffix(name, "*"); ok {
					patterns[pn] = append(patterns[pn], prefix)
					if !slices.ContainsFunc(slices.Collect(maps.Keys(procs[pn])), func(n string) bool { return strings.HasPrefix(n, prefix) }) {
						t.Errorf("%s:%d: no %s metric matches %s", cataloguePath, r.line, pn, name)
					}
					continue
				}
				documented[pn][name] = true
				m, ok := procs[pn][name]
				if !ok {
					t.Errorf("%s:%d: %s is not registered by the %s", cataloguePath, r.line, name, pn)
					continue
				}
				if labels := slices.Sorted(slices.Values(m.labels)); !slices.Equal(labels, r.labels) {
					t.Errorf("%s:%d: %s has labels %v in the %s, documented %v", cataloguePath, r.line, name, labels, pn, r.labels)
				}
				if m.typ != "" && m.typ != r.typ {
					t.Errorf("%s:%d: %s is a %s in the %s's /metrics, documented as a %s", cataloguePath, r.line, name, m.typ, pn, r.typ)
				}
			}
		}
	}
	for pn, p := range procs {
		for name := range p {
			if documented[pn][name] || slices.ContainsFunc(patterns[pn], func(prefix string) bool { return strings.HasPrefix(name, prefix) }) {
				continue
			}
			t.Errorf("the %s registers %s (labels %v), which %s does not document in a section of the %s", pn, name, p[name].labels, cataloguePath, pn)
		}
	}
}
