package compose

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"

	"github.com/dynamo-go/dynamo/deploy/internal/deploytest"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func TestMain(m *testing.M) { deploytest.Main(m) }

// load loads compose.yaml as docker compose would, with the given
// profiles and no environment of the test's.
func load(t *testing.T, profiles ...string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."), cli.WithEnv(nil), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return p
}

func TestServices(t *testing.T) {
	for _, tc := range []struct {
		profiles []string
		want     []string
	}{
		{nil, []string{"etcd", "frontend", "grafana", "jaeger", "mocker-1", "mocker-2", "nats", "prometheus"}},
		{[]string{"disagg"}, []string{"decode-1", "decode-2", "etcd", "frontend", "grafana", "jaeger", "mocker-1", "mocker-2", "nats", "prefill", "prometheus"}},
	} {
		got := load(t, tc.profiles...).ServiceNames()
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("profiles %v: services %v, want %v", tc.profiles, got, tc.want)
		}
	}
}

// binaryOf names the stack's binary a service's image runs, or "".
func binaryOf(image string) string {
	name, _, _ := strings.Cut(image, ":")
	for _, c := range []string{"frontend", "mocker", "worker"} {
		if strings.HasSuffix(name, "/"+c) {
			return c
		}
	}
	return ""
}

func env(s types.ServiceConfig, name string) string {
	if v := s.Environment[name]; v != nil {
		return *v
	}
	return ""
}

// flagValue returns the value of --name=value or --name value in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func seconds(t *testing.T, s string, def int) time.Duration {
	t.Helper()
	if s == "" {
		return time.Duration(def) * time.Second
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(n) * time.Second
}

// The stack's services: images, command lines and variables the binaries
// accept, the control plane, traces, and enough time to drain on stop.
func TestStackServices(t *testing.T) {
	p := load(t, "disagg")
	root := deploytest.Root(t)
	for _, s := range p.Services {
		if s.Image == "" || strings.HasSuffix(s.Image, ":latest") || !strings.Contains(s.Image, ":") {
			t.Errorf("%s: image %q: want a release tag", s.Name, s.Image)
		}
		bin := binaryOf(s.Image)
		if bin == "" {
			continue
		}
		where := "compose.yaml service " + s.Name
		if s.Build == nil || s.Build.Target != bin || s.Build.Dockerfile != "deploy/docker/Dockerfile" || filepath.Clean(s.Build.Context) != root {
			t.Errorf("%s: build %+v: want target %s of deploy/docker/Dockerfile in the repository root", where, s.Build, bin)
		}
		args := []string(s.Command)
		deploytest.CheckArgs(t, where, bin, args)
		var names []string
		for k := range s.Environment {
			names = append(names, k)
		}
		deploytest.CheckEnv(t, where, bin, names)
		if v := flagValue(args, "endpoint"); v != "" {
			if _, err := runtime.ParseEndpointID(v); err != nil {
				t.Errorf("%s: --endpoint: %v", where, err)
			}
		}
		if flagValue(args, "request-plane") != "nats" {
			t.Errorf("%s: --request-plane %q: NATS is there, and KV events need it", where, flagValue(args, "request-plane"))
		}
		for _, dep := range []string{"etcd", "nats"} {
			if _, ok := s.DependsOn[dep]; !ok {
				t.Errorf("%s: does not depend on %s", where, dep)
			}
		}
		if u, err := url.Parse(env(s, "ETCD_ENDPOINTS")); err != nil || u.Hostname() != "etcd" || u.Port() != "2379" {
			t.Errorf("%s: ETCD_ENDPOINTS %q", where, env(s, "ETCD_ENDPOINTS"))
		}
		if u, err := url.Parse(env(s, "NATS_SERVER")); err != nil || u.Hostname() != "nats" || u.Port() != "4222" {
			t.Errorf("%s: NATS_SERVER %q", where, env(s, "NATS_SERVER"))
		}
		if u, err := url.Parse(env(s, "OTEL_EXPORTER_OTLP_ENDPOINT")); env(s, "OTEL_EXPORT_ENABLED") != "1" || err != nil || u.Hostname() != "jaeger" || u.Port() != "4317" {
			t.Errorf("%s: traces: OTEL_EXPORT_ENABLED %q, endpoint %q: want export to jaeger:4317", where, env(s, "OTEL_EXPORT_ENABLED"), env(s, "OTEL_EXPORTER_OTLP_ENDPOINT"))
		}
		var stop time.Duration
		if s.StopGracePeriod != nil {
			stop = time.Duration(*s.StopGracePeriod)
		}
		switch bin {
		case "frontend":
			if need := seconds(t, env(s, "DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS"), 5) + seconds(t, env(s, "DYN_HTTP_DRAIN_TIMEOUT_SECS"), 30) + 5*time.Second; stop < need {
				t.Errorf("%s: stop_grace_period %v, the frontend's shutdown needs %v", where, stop, need)
			}
		case "mocker", "worker":
			if env(s, "DYN_SYSTEM_PORT") == "" {
				t.Errorf("%s: no DYN_SYSTEM_PORT: its status server (and /metrics) would be off", where)
			}
			drain := seconds(t, env(s, "DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS"), 5) + seconds(t, env(s, "DYN_RUNTIME_GRACEFUL_SHUTDOWN_TIMEOUT_SECS"), 30)
			if need := drain + 15*time.Second; stop < need {
				t.Errorf("%s: stop_grace_period %v, the worker's shutdown needs %v", where, stop, need)
			}
			if hard := seconds(t, env(s, "DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT"), 30); bin == "mocker" && (hard < drain+5*time.Second || hard >= stop) {
				t.Errorf("%s: DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT %v: want between %v and stop_grace_period %v", where, hard, drain+5*time.Second, stop)
			}
		}
	}
	// The disaggregated model: its prefill and decode workers agree on
	// the model name, and the prefill worker offers the bootstrap handoff.
	pre, dec := p.Services["prefill"], p.Services["decode-1"]
	if flagValue(pre.Command, "model-name") != flagValue(dec.Command, "model-name") ||
		flagValue(pre.Command, "disaggregation-mode") != "prefill" || flagValue(dec.Command, "disaggregation-mode") != "decode" ||
		flagValue(pre.Command, "bootstrap-ports") == "" {
		t.Errorf("disagg: prefill %q, decode %q", pre.Command, dec.Command)
	}
}

// etcd runs with its defaults but for where it listens, which its own
// flag parser accepts; NATS likewise, without JetStream.
func TestControlPlane(t *testing.T) {
	p := load(t)
	etcd := p.Services["etcd"]
	cfg, fs, err := deploytest.ParseEtcdArgs(etcd.Command[1:])
	if err != nil {
		t.Fatal(err)
	}
	if etcd.Command[0] != "etcd" || fs.Lookup("listen-client-urls").Value.String() != "http://0.0.0.0:2379" ||
		fs.Lookup("advertise-client-urls").Value.String() != "http://etcd:2379" {
		t.Errorf("etcd: %q", etcd.Command)
	}
	if !slices.ContainsFunc(etcd.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == cfg.Dir }) {
		t.Errorf("etcd: data directory %s is not on a volume", cfg.Dir)
	}
	nats, err := deploytest.ParseNATSArgs(p.Services["nats"].Command)
	if err != nil {
		t.Fatal(err)
	}
	if nats.Port != 4222 || nats.JetStream {
		t.Errorf("nats: port %d, JetStream %v", nats.Port, nats.JetStream)
	}
}

// Every process that exports metrics is scraped where it serves them: the
// frontend on its --http-port, each worker on DYN_SYSTEM_PORT, etcd on its
// client port.
func TestPrometheusScrapesEveryProcess(t *testing.T) {
	p := load(t, "disagg")
	prom := p.Services["prometheus"]
	var cfgPath string
	for _, v := range prom.Volumes {
		if v.Target == "/etc/prometheus/prometheus.yml" {
			cfgPath = v.Source
		}
	}
	if cfgPath == "" {
		t.Fatal("prometheus: no /etc/prometheus/prometheus.yml mounted")
	}
	cfg := loadPrometheusConfig(t, cfgPath)
	targets := map[string]string{} // host:port -> job
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				targets[target] = sc.JobName
				host, _, err := net.SplitHostPort(target)
				if err != nil {
					t.Errorf("job %s: target %q: %v", sc.JobName, target, err)
				} else if _, ok := p.Services[host]; !ok && host != "localhost" {
					t.Errorf("job %s: target %q is no service", sc.JobName, target)
				}
			}
		}
	}
	for _, s := range p.Services {
		var port string
		switch binaryOf(s.Image) {
		case "frontend":
			port = flagValue(s.Command, "http-port")
		case "mocker", "worker":
			port = env(s, "DYN_SYSTEM_PORT")
		default:
			if s.Name == "etcd" {
				port = "2379"
			} else {
				continue
			}
		}
		if _, ok := targets[net.JoinHostPort(s.Name, port)]; !ok {
			t.Errorf("service %s serves /metrics on %s, which no job scrapes", s.Name, port)
		}
	}
}

// Grafana starts with the Prometheus data source and the dashboard that
// deploy/grafana's tests keep true to the metrics (the file itself, not a
// copy).
func TestGrafanaProvisioning(t *testing.T) {
	p := load(t)
	g := p.Services["grafana"]
	root := deploytest.Root(t)
	var provisioning, dashboard string
	for _, v := range g.Volumes {
		switch {
		case v.Target == "/etc/grafana/provisioning":
			provisioning = v.Source
		case strings.HasSuffix(v.Target, ".json"):
			dashboard = v.Target
			if v.Source != filepath.Join(root, "deploy/grafana/dynamo-go.json") {
				t.Errorf("grafana: dashboard from %s, want deploy/grafana/dynamo-go.json", v.Source)
			}
		}
	}
	if provisioning == "" || dashboard == "" {
		t.Fatalf("grafana: volumes %+v", g.Volumes)
	}

	var ds struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
			IsDefault                    bool `json:"isDefault"`
			Editable                     bool `json:"editable"`
		} `json:"datasources"`
	}
	readYAML(t, filepath.Join(provisioning, "datasources/prometheus.yaml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || !ds.Datasources[0].IsDefault ||
		ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("grafana data sources: %+v", ds.Datasources)
	}

	var dp struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name, Type      string
			DisableDeletion bool `json:"disableDeletion"`
			AllowUIUpdates  bool `json:"allowUiUpdates"`
			Options         struct {
				Path                      string `json:"path"`
				FoldersFromFilesStructure bool   `json:"foldersFromFilesStructure"`
			} `json:"options"`
		} `json:"providers"`
	}
	readYAML(t, filepath.Join(provisioning, "dashboards/dynamo-go.yaml"), &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" || dp.Providers[0].Options.Path != filepath.Dir(dashboard) {
		t.Errorf("grafana dashboard providers: %+v, want a file provider of %s", dp.Providers, filepath.Dir(dashboard))
	}
	if env(g, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH") != dashboard {
		t.Errorf("grafana: home dashboard %q, want %s", env(g, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"), dashboard)
	}

	// The dashboard chooses its data source among the Prometheus ones,
	// starting with the default: the one provisioned.
	var d struct {
		Templating struct {
			List []struct {
				Name, Type string
				Query      any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy/grafana/dynamo-go.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name, Type string
		Query      any `json:"query"`
	}) bool {
		return v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("dynamo-go.json has no Prometheus data source selector")
	}
}

// readYAML decodes a YAML file strictly: an unknown field is an error.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
