package helm

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/dynamo-go/dynamo/deploy/internal/deploytest"
)

var update = flag.Bool("update", false, "rewrite deploy/k8s/dynamo-go.yaml from the chart's defaults")

func TestMain(m *testing.M) { deploytest.Main(m) }

// valueFiles are the cases rendered: the defaults, and testdata's files.
var valueFiles = []string{"", "external.yaml", "ha.yaml", "bridge.yaml"}

// plainManifestsPath is the chart rendered with its defaults.
const plainManifestsPath = "../k8s/dynamo-go.yaml"

func TestChartRenders(t *testing.T) {
	for _, file := range valueFiles {
		name := file
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			r := render(t, file)
			checkObjects(t, r)
			if !strings.Contains(r.notes, "/v1/models") || strings.Contains(r.notes, "<no value>") {
				t.Errorf("NOTES.txt:\n%s", r.notes)
			}
		})
	}
}

// What each case makes, by kind and name.
func TestChartObjects(t *testing.T) {
	want := map[string][]string{
		"": {
			"Deployment/dynamo-go-frontend", "Deployment/dynamo-go-worker-demo",
			"PodDisruptionBudget/dynamo-go-frontend", "PodDisruptionBudget/dynamo-go-worker-demo",
			"Service/dynamo-go-etcd", "Service/dynamo-go-etcd-headless", "Service/dynamo-go-frontend",
			"Service/dynamo-go-nats", "Service/dynamo-go-nats-headless", "Service/dynamo-go-worker-demo",
			"StatefulSet/dynamo-go-etcd", "StatefulSet/dynamo-go-nats",
		},
		"external.yaml": {
			"Deployment/dynamo-go-frontend", "Deployment/dynamo-go-worker-demo",
			"PodDisruptionBudget/dynamo-go-frontend", "PodDisruptionBudget/dynamo-go-worker-demo",
			"Service/dynamo-go-frontend", "Service/dynamo-go-worker-demo",
		},
		"ha.yaml": {
			"Deployment/dynamo-go-frontend", "Deployment/dynamo-go-worker-demo",
			"HorizontalPodAutoscaler/dynamo-go-frontend", "Ingress/dynamo-go-frontend",
			"PodDisruptionBudget/dynamo-go-etcd", "PodDisruptionBudget/dynamo-go-frontend",
			"PodDisruptionBudget/dynamo-go-nats", "PodDisruptionBudget/dynamo-go-worker-demo",
			"Service/dynamo-go-etcd", "Service/dynamo-go-etcd-headless", "Service/dynamo-go-frontend",
			"Service/dynamo-go-nats", "Service/dynamo-go-nats-headless", "Service/dynamo-go-worker-demo",
			"ServiceMonitor/dynamo-go-frontend", "ServiceMonitor/dynamo-go-workers",
			"StatefulSet/dynamo-go-etcd", "StatefulSet/dynamo-go-nats",
		},
	}
	for file, w := range want {
		if got := render(t, file).kinds(); !slices.Equal(got, w) {
			t.Errorf("values %q: objects\n%s\nwant\n%s", file, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
}

// Values that cannot work are refused at render time with a message that
// says what to set.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"external etcd without endpoints", "etcd: {enabled: false}", "set etcd.endpoints"},
		{"external NATS without url", "nats: {enabled: false}", "set nats.url"},
		{"two etcd members", "etcd: {replicas: 2}", "etcd.replicas: 1, 3 or 5"},
		{"unknown engine", "models: [{name: x, engine: tgi, modelPath: m}]", `engine "tgi"`},
		{"bridge without engine URL", "models: [{name: x, engine: vllm, modelPath: m}]", "needs engineURL"},
		{"model name", "models: [{name: My_Model, modelPath: m}]", "lower-case letters"},
		{"model twice", "models: [{name: a, modelPath: m}, {name: a, modelPath: m}]", `"a" twice`},
		{"tracing without endpoint", "dynamo: {tracing: {enabled: true}}", "set dynamo.tracing.endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]any
			if err := yamlUnmarshal(tc.values, &v); err != nil {
				t.Fatal(err)
			}
			_, err := renderChart(loadChart(t), v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// helm lint finds nothing above INFO, for every case.
func TestChartLints(t *testing.T) {
	for _, file := range valueFiles {
		res := lint.All(chartDir, readValues(t, file), release.Namespace, false)
		for _, m := range res.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("values %q: helm lint: %s", file, m)
			}
		}
	}
}

// deploy/k8s is the chart rendered with its defaults.
func TestPlainManifests(t *testing.T) {
	got := render(t, "").plainManifests()
	if *update {
		if err := os.WriteFile(plainManifestsPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if readFile(t, plainManifestsPath) != got {
		t.Errorf("%s differs from the chart rendered with its defaults: run go test ./deploy/helm -run TestPlainManifests -update", plainManifestsPath)
	}
	// They are what kubectl would read: the same objects again.
	var objs []object
	for i, doc := range splitDocs(got) {
		o, err := decode(strconv.Itoa(i), doc)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	if len(objs) != len(render(t, "").objects) {
		t.Errorf("%s has %d objects, the chart %d", plainManifestsPath, len(objs), len(render(t, "").objects))
	}
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func splitDocs(s string) []string {
	var out []string
	for _, d := range docSep.Split(s, -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, d)
		}
	}
	return out
}

// checkObjects checks what must hold for every rendering.
func checkObjects(t *testing.T, r *rendered) {
	t.Helper()
	for _, o := range r.objects {
		if errs := validation.IsDNS1123Subdomain(o.name); len(errs) > 0 {
			t.Errorf("%s %s: %v", o.kind, o.name, errs)
		}
		if m, ok := o.obj.(metav1.Object); ok && m.GetNamespace() != "" {
			t.Errorf("%s %s: sets a namespace: kubectl apply -n must decide", o.kind, o.name)
		}
	}
	pods := map[string]*corev1.PodTemplateSpec{} // workload -> pod template
	for _, d := range of[*appsv1.Deployment](r) {
		checkSelector(t, "Deployment "+d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		pods["Deployment/"+d.Name] = &d.Spec.Template
		checkPod(t, "Deployment "+d.Name, &d.Spec.Template, nil)
	}
	for _, s := range of[*appsv1.StatefulSet](r) {
		checkSelector(t, "StatefulSet "+s.Name, s.Spec.Selector, s.Spec.Template.Labels)
		pods["StatefulSet/"+s.Name] = &s.Spec.Template
		checkPod(t, "StatefulSet "+s.Name, &s.Spec.Template, s.Spec.VolumeClaimTemplates)
		if !slices.ContainsFunc(of[*corev1.Service](r), func(svc *corev1.Service) bool {
			return svc.Name == s.Spec.ServiceName && svc.Spec.ClusterIP == corev1.ClusterIPNone && svc.Spec.PublishNotReadyAddresses
		}) {
			t.Errorf("StatefulSet %s: no headless Service %q publishing not-ready addresses", s.Name, s.Spec.ServiceName)
		}
		checkControlPlaneArgs(t, s)
	}
	services := map[string]*corev1.Service{}
	for _, svc := range of[*corev1.Service](r) {
		services[svc.Name] = svc
		if errs := validation.IsDNS1035Label(svc.Name); len(errs) > 0 {
			t.Errorf("Service %s: %v", svc.Name, errs)
		}
		matched := podsSelectedBy(pods, labels.SelectorFromSet(svc.Spec.Selector))
		if len(svc.Spec.Selector) == 0 || len(matched) == 0 {
			t.Errorf("Service %s: selects no pods of the chart", svc.Name)
		}
		for _, p := range svc.Spec.Ports {
			for _, pod := range matched {
				if !hasPort(pod, p.TargetPort) {
					t.Errorf("Service %s: port %s: target %s is no container port", svc.Name, p.Name, p.TargetPort.String())
				}
			}
		}
	}
	for _, pdb := range of[*policyv1.PodDisruptionBudget](r) {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || len(podsSelectedBy(pods, sel)) != 1 {
			t.Errorf("PodDisruptionBudget %s: selects %d workloads, want 1 (%v)", pdb.Name, len(podsSelectedBy(pods, sel)), err)
		}
	}
	for _, hpa := range of[*autoscalingv2.HorizontalPodAutoscaler](r) {
		ref := hpa.Spec.ScaleTargetRef
		d := find(of[*appsv1.Deployment](r), ref.Name)
		switch {
		case ref.Kind != "Deployment" || d == nil:
			t.Errorf("HorizontalPodAutoscaler %s: scales %s %s, not a Deployment of the chart", hpa.Name, ref.Kind, ref.Name)
		case d.Spec.Replicas != nil:
			t.Errorf("HorizontalPodAutoscaler %s: Deployment %s sets replicas, which would fight the autoscaler", hpa.Name, d.Name)
		default:
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.Resources.Requests.Cpu().IsZero() {
					t.Errorf("HorizontalPodAutoscaler %s: container %s has no CPU request to scale on", hpa.Name, c.Name)
				}
			}
		}
	}
	for _, ing := range of[*networkingv1.Ingress](r) {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				svc := services[p.Backend.Service.Name]
				if svc == nil || !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == p.Backend.Service.Port.Name }) {
					t.Errorf("Ingress %s: backend %s:%s is no Service port of the chart", ing.Name, p.Backend.Service.Name, p.Backend.Service.Port.Name)
				}
			}
		}
	}
	for _, sm := range of[*monitoringv1.ServiceMonitor](r) {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, svc := range services {
			if !sel.Matches(labels.Set(svc.Labels)) {
				continue
			}
			n++
			for _, ep := range sm.Spec.Endpoints {
				if ep.Path != "/metrics" || !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == ep.Port }) {
					t.Errorf("ServiceMonitor %s: endpoint %s%s: not a port of Service %s serving /metrics", sm.Name, ep.Port, ep.Path, svc.Name)
				}
			}
		}
		if n == 0 {
			t.Errorf("ServiceMonitor %s: selects no Service", sm.Name)
		}
	}
}

func find[T metav1.Object](objs []T, name string) T {
	var zero T
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	return zero
}

func checkSelector(t *testing.T, what string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() || !s.Matches(labels.Set(podLabels)) {
		t.Errorf("%s: selector %v does not select its pods %v (%v)", what, sel, podLabels, err)
	}
}

func podsSelectedBy(pods map[string]*corev1.PodTemplateSpec, sel labels.Selector) []*corev1.PodTemplateSpec {
	var out []*corev1.PodTemplateSpec
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// hasPort reports whether a container of pod has the port (by name or
// number).
func hasPort(pod *corev1.PodTemplateSpec, port intstr.IntOrString) bool {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return true
			}
		}
	}
	return false
}
