// Package grafana holds the Grafana dashboard of the stack
// (dynamo-go.json) and the tests that keep it true: the dashboard is
// valid, and every metric its queries name is one the frontend or a
// worker registers, checked against registries built by the real code.
// The same tests keep the metrics catalogue, docs/observability.md, equal
// to what the code registers.
package grafana
