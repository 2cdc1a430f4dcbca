package grafana

import "testing"

// The dashboard and the catalogue name only metrics the code registers,
// and the catalogue names all of them: both are checked against the
// registries of a frontend and a worker built by the real code (see
// startStack). Renaming a metric, or changing its labels or type, fails
// here until the dashboard and docs/observability.md follow.
func TestDashboardAndCatalogueMatchTheRegistries(t *testing.T) {
	s := startStack(t)
	rows := readCatalogue(t)
	t.Run("catalogue", func(t *testing.T) { checkCatalogue(t, s, rows) })
	t.Run("dashboard", func(t *testing.T) { checkDashboard(t, s, rows) })
}
