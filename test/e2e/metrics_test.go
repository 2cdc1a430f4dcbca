package e2e

import (
	"bufio"
	"slices"
	"strconv"
	"strings"
)

// metrics is a scraped Prometheus text exposition.
type metrics string

// value returns the sample of name whose labels include every given
// `label="value"` pair, and whether there is exactly one such sample.
func (m metrics) value(name string, labels ...string) (float64, bool) {
	var (
		v     float64
		found int
	)
	sc := bufio.NewScanner(strings.NewReader(string(m)))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		var set string
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			set, rest = rest[1:end], rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // a longer name with the same prefix
		}
		pairs := strings.Split(set, ",")
		match := true
		for _, l := range labels {
			if !slices.Contains(pairs, l) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			continue
		}
		v = f
		found++
	}
	return v, found == 1
}

// generateEndpoint selects a worker's dynamo_component_* series of the
// generate endpoint: a mocker also serves worker_kv_indexer_query_dp{r},
// with series of its own.
const generateEndpoint = `dynamo_endpoint="generate"`
