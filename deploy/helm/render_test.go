package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// chartDir is the chart, relative to this package.
const chartDir = "dynamo-go"

// release is the release the tests render, and deploy/k8s holds.
var release = chartutil.ReleaseOptions{Name: "dynamo-go", Namespace: "dynamo", Revision: 1, IsInstall: true, IsUpgrade: false}

// rendered is the chart rendered for some values.
type rendered struct {
	// manifests in Helm's install order (kind, then name), each with
	// the template it came from.
	manifests []releaseutil.Manifest
	// objects are the manifests decoded strictly into their API types.
	objects []object
	// notes is NOTES.txt.
	notes string
	chart *chart.Chart
}

// object is one decoded Kubernetes object.
type object struct {
	source string // the template
	kind   string
	name   string
	obj    any // *appsv1.Deployment, *corev1.Service, ...
}

// loadChart loads the chart from its directory, as helm install does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readValues reads a values file of testdata ("" for none).
func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

// renderChart renders the chart with values over its defaults, as helm
// template does, or returns the error Helm gives.
func renderChart(c *chart.Chart, values map[string]any) (*rendered, error) {
	vals, err := chartutil.ToRenderValues(c, values, release, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, err
	}
	r := &rendered{chart: c}
	for name, content := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			r.notes = content
			delete(files, name)
		}
	}
	_, r.manifests, err = releaseutil.SortManifests(files, chartutil.DefaultVersionSet, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	for _, m := range r.manifests {
		o, err := decode(m.Name, m.Content)
		if err != nil {
			return nil, err
		}
		r.objects = append(r.objects, o)
	}
	return r, nil
}

// render renders the chart with a values file of testdata ("" for the
// defaults) and fails the test on an error.
func render(t *testing.T, file string) *rendered {
	t.Helper()
	r, err := renderChart(loadChart(t), readValues(t, file))
	if err != nil {
		t.Fatalf("values %q: %v", file, err)
	}
	return r
}

// decode decodes one manifest into the type its apiVersion and kind name,
// strictly: an unknown or duplicated field is an error, as it would be for
// kubectl apply --validate=strict.
func decode(source, doc string) (object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return object{}, fmt.Errorf("%s: %w", source, err)
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "networking.k8s.io/v1 Ingress":
		obj = &networkingv1.Ingress{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	default:
		return object{}, fmt.Errorf("%s: %s %s: not a kind the chart should make", source, tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		return object{}, fmt.Errorf("%s: %s: %w", source, tm.Kind, err)
	}
	name := ""
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetName()
	}
	return object{source: source, kind: tm.Kind, name: name, obj: obj}, nil
}

// of returns the objects of type T.
func of[T any](r *rendered) []T {
	var out []T
	for _, o := range r.objects {
		if x, ok := o.obj.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// kinds lists "Kind/name" of every object, sorted.
func (r *rendered) kinds() []string {
	var out []string
	for _, o := range r.objects {
		out = append(out, o.kind+"/"+o.name)
	}
	slices.Sort(out)
	return out
}

// plainManifests is the text of deploy/k8s/dynamo-go.yaml: the manifests
// in install order, each under the name of its template.
func (r *rendered) plainManifests() string {
	var b strings.Builder
	b.WriteString("# dynamo-go, rendered from deploy/helm/dynamo-go with its default values\n")
	b.WriteString("# (release \"dynamo-go\"). Do not edit: change the chart, then run\n")
	b.WriteString("#   go test ./deploy/helm -run TestPlainManifests -update\n")
	b.WriteString("# Apply with: kubectl apply -n NAMESPACE -f deploy/k8s/dynamo-go.yaml\n")
	for _, m := range r.manifests {
		b.WriteString("---\n# Source: " + m.Name + "\n")
		b.WriteString(strings.TrimSpace(stripComments(m.Content)) + "\n")
	}
	return b.String()
}

var blankLines = regexp.MustCompile(`\n{2,}`)

// stripComments drops the leading comment lines of a manifest (the
// template's notes stay in the chart), keeping the rest as rendered.
func stripComments(s string) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && (strings.HasPrefix(strings.TrimSpace(lines[0]), "#") || strings.TrimSpace(lines[0]) == "") {
		lines = lines[1:]
	}
	return blankLines.ReplaceAllString(strings.Join(lines, "\n"), "\n")
}

// readFile returns a file's text, or "" if it does not exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}
