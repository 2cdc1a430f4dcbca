package frontend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
)

// maxNamesListed bounds the served names a "Model not found" lists.
const maxNamesListed = 10

// modelNotFound is the refusal of a request for a model that is not
// served for the endpoint (needs; 0: any): it says what is served, or why
// nothing is yet, so that the client can fix its request.
func (s *Service) modelNotFound(name string, needs modelcard.ModelType) error {
	var ready, starting []string
	for _, m := range s.models.Models() {
		if needs != 0 && !m.Serves(needs) {
			continue
		}
		if m.Ready() {
			ready = append(ready, m.Name())
		} else {
			starting = append(starting, m.Name())
		}
	}
	slices.Sort(ready)
	slices.Sort(starting)
	var hint string
	switch {
	case len(ready) > 0:
		for _, n := range ready {
			if strings.EqualFold(n, name) {
				return fmt.Errorf("%w: %s (did you mean %q? names are case-sensitive)", ErrModelNotFound, name, n)
			}
		}
		hint = "served: " + listNames(ready)
	case len(starting) > 0:
		hint = "no worker is ready yet; registered, starting: " + listNames(starting)
	case !s.models.Synced():
		hint = "no model is served yet: the frontend is still reading discovery"
	default:
		hint = "no model is served yet: no worker has registered one; start a worker on the same discovery backend (and namespace, with --namespace)"
	}
	return fmt.Errorf("%w: %s (%s)", ErrModelNotFound, name, hint)
}

func listNames(names []string) string {
	if len(names) <= maxNamesListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (GET /v1/models)", strings.Join(names[:maxNamesListed], ", "), len(names)-maxNamesListed)
}
