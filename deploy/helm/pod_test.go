package helm

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamo-go/dynamo/deploy/internal/deploytest"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func yamlUnmarshal(s string, v any) error { return yaml.Unmarshal([]byte(s), v) }

// binaryOf names what a container runs by its image: one of the stack's
// binaries (REPOSITORY/frontend:TAG, ...), "etcd", "nats", or "" for a
// container the values brought (a sidecar engine).
func binaryOf(image string) string {
	name, _, _ := strings.Cut(image, ":")
	switch {
	case strings.HasSuffix(name, "/etcd"):
		return "etcd"
	case name == "nats" || strings.HasSuffix(name, "/nats"):
		return "nats"
	}
	for _, c := range []string{"frontend", "mocker", "worker"} {
		if strings.HasSuffix(name, "/"+c) {
			return c
		}
	}
	return ""
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkPod checks a pod template: security contexts, resources, probes on
// ports the containers have and paths the binaries answer, volumes,
// variable references, the command lines and environment against the
// binaries, and the termination grace against the shutdown the
// environment configures.
func checkPod(t *testing.T, what string, pod *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) {
	t.Helper()
	ps := pod.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot, a non-zero runAsUser, RuntimeDefault seccomp", what, ps)
	}
	volumes := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range claims {
		volumes[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		where := fmt.Sprintf("%s container %s", what, c.Name)
		bin := binaryOf(c.Image)
		checkVarRefs(t, where, c)
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: mounts %q, no volume of the pod", where, m.Name)
			}
		}
		if bin == "" {
			continue // brought by the values
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: securityContext %+v: want no privilege escalation, a read-only root file system, capabilities dropped", where, sc)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s: no CPU or memory request", where)
		}
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
		}{{"liveness", c.LivenessProbe}, {"readiness", c.ReadinessProbe}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", where, p.name)
				continue
			}
			if port := containerPort(c, p.probe.HTTPGet.Port.String()); port == 0 {
				t.Errorf("%s: %s probe on %s, not a port of the container", where, p.name, p.probe.HTTPGet.Port.String())
			}
		}
		if bin == "etcd" || bin == "nats" {
			continue
		}
		// The stack's binaries.
		if !hasMount(c, "/tmp") {
			t.Errorf("%s: no writable /tmp on a read-only root file system", where)
		}
		if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path != "/live" {
			t.Errorf("%s: liveness probe on %s, want /live", where, c.LivenessProbe.HTTPGet.Path)
		}
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/health" {
			t.Errorf("%s: readiness probe on %s, want /health", where, c.ReadinessProbe.HTTPGet.Path)
		}
		deploytest.CheckArgs(t, where, bin, c.Args)
		var names []string
		env := map[string]string{}
		for _, e := range c.Env {
			names = append(names, e.Name)
			env[e.Name] = e.Value
		}
		deploytest.CheckEnv(t, where, bin, names)
		if v := flagValue(c.Args, "endpoint"); v != "" {
			if _, err := runtime.ParseEndpointID(v); err != nil {
				t.Errorf("%s: --endpoint: %v", where, err)
			}
		}
		grace := int64(0)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		switch bin {
		case "frontend":
			port := containerPort(c, c.ReadinessProbe.HTTPGet.Port.String())
			if httpPort := flagValue(c.Args, "http-port"); httpPort != strconv.Itoa(int(port)) {
				t.Errorf("%s: probes on port %d, the frontend listens on --http-port %q", where, port, httpPort)
			}
			// /health turns 503, then requests in flight drain.
			need := atoi(t, env["DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS"], 5) + atoi(t, env["DYN_HTTP_DRAIN_TIMEOUT_SECS"], 30) + 5
			if grace < need {
				t.Errorf("%s: terminationGracePeriodSeconds %d, the frontend's shutdown needs %d", where, grace, need)
			}
		case "mocker", "worker":
			port := containerPort(c, c.ReadinessProbe.HTTPGet.Port.String())
			if sys := env["DYN_SYSTEM_PORT"]; sys != strconv.Itoa(int(port)) {
				t.Errorf("%s: probes on port %d, the status server is on DYN_SYSTEM_PORT %q", where, port, sys)
			}
			if c.StartupProbe == nil || c.StartupProbe.HTTPGet == nil || c.StartupProbe.HTTPGet.Path != "/live" {
				t.Errorf("%s: no startup probe on /live: liveness would kill a worker still loading", where)
			}
			if home := env["HF_HOME"]; home == "" || !hasMountAbove(c, home) {
				t.Errorf("%s: HF_HOME %q is not on a writable volume", where, home)
			}
			// docs/protocol.md 12.1: unregister (up to 5 s), grace period,
			// drain, kill and wait (5 s), then exit.
			drain := atoi(t, env["DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS"], 5) + atoi(t, env["DYN_RUNTIME_GRACEFUL_SHUTDOWN_TIMEOUT_SECS"], 30)
			if need := drain + 15; grace < need {
				t.Errorf("%s: terminationGracePeriodSeconds %d, the worker's shutdown needs %d", where, grace, need)
			}
			if bin == "mocker" {
				// The mocker's own bound (exit 70 past it) comes after the
				// drain and before the kubelet's SIGKILL.
				hard := atoi(t, env["DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT"], 30)
				if hard < drain+5 || hard >= grace {
					t.Errorf("%s: DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT %d: want between %d and the grace period %d", where, hard, drain+5, grace)
				}
			}
		}
	}
}

// checkVarRefs checks that every $(VAR) in a container's args and
// environment names a variable of its environment (defined before it,
// for the environment).
func checkVarRefs(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	defined := map[string]bool{}
	for _, e := range c.Env {
		for _, m := range varRef.FindAllStringSubmatch(e.Value, -1) {
			if !defined[m[1]] {
				t.Errorf("%s: env %s refers to $(%s), not defined before it", where, e.Name, m[1])
			}
		}
		defined[e.Name] = true
	}
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		for _, m := range varRef.FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				t.Errorf("%s: argument %q refers to $(%s), not in its environment", where, a, m[1])
			}
		}
	}
}

func containerPort(c corev1.Container, nameOrNumber string) int32 {
	for _, p := range c.Ports {
		if p.Name == nameOrNumber || strconv.Itoa(int(p.ContainerPort)) == nameOrNumber {
			return p.ContainerPort
		}
	}
	return 0
}

func hasMount(c corev1.Container, path string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path && !m.ReadOnly })
}

func hasMountAbove(c corev1.Container, path string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return !m.ReadOnly && (path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/"))
	})
}

// flagValue returns the value of --name=value (or --name value) in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v
		}
		if a == "-"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func atoi(t *testing.T, s string, def int64) int64 {
	t.Helper()
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Errorf("%q: %v", s, err)
	}
	return n
}

// expand replaces $(POD_NAME) and $(POD_NAMESPACE) by what the first pod
// of the StatefulSet gets.
func expand(s *appsv1.StatefulSet, args []string) []string {
	r := strings.NewReplacer("$(POD_NAME)", s.Name+"-0", "$(POD_NAMESPACE)", release.Namespace)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// checkControlPlaneArgs parses the bundled etcd's and NATS's command lines
// with their own flag parsers (etcd's embed.Config flags, NATS's
// ConfigureOptions) and checks that the members of a cluster name one
// another by the DNS names the headless Service gives them.
func checkControlPlaneArgs(t *testing.T, s *appsv1.StatefulSet) {
	t.Helper()
	c := s.Spec.Template.Spec.Containers[0]
	n := int(*s.Spec.Replicas)
	host := func(i int) string {
		return fmt.Sprintf("%s-%d.%s.%s.svc", s.Name, i, s.Spec.ServiceName, release.Namespace)
	}
	args := expand(s, c.Args)
	switch binaryOf(c.Image) {
	case "etcd":
		cfg, fs, err := deploytest.ParseEtcdArgs(args)
		if err != nil {
			t.Errorf("StatefulSet %s: %v", s.Name, err)
			return
		}
		members := strings.Split(cfg.InitialCluster, ",")
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("%s-%d=http://%s:2380", s.Name, i, host(i)))
		}
		if !slices.Equal(members, want) {
			t.Errorf("StatefulSet %s: --initial-cluster %q, want %q", s.Name, members, want)
		}
		if cfg.Name != s.Name+"-0" {
			t.Errorf("StatefulSet %s: --name %q", s.Name, cfg.Name)
		}
		for _, f := range []string{"advertise-client-urls", "initial-advertise-peer-urls"} {
			if v := fs.Lookup(f).Value.String(); !strings.Contains(v, "//"+host(0)+":") {
				t.Errorf("StatefulSet %s: --%s %q, want the member's own name %s", s.Name, f, v, host(0))
			}
		}
		if fs.Lookup("max-request-bytes").Value.String() != strconv.Itoa(int(embed.DefaultMaxRequestBytes)) {
			t.Errorf("StatefulSet %s: etcd's request limit changed: the stack works with stock etcd", s.Name)
		}
	case "nats":
		opts, err := deploytest.ParseNATSArgs(args)
		if err != nil {
			t.Errorf("StatefulSet %s: %v", s.Name, err)
			return
		}
		if opts.Port != 4222 || opts.HTTPPort != 8222 || opts.JetStream {
			t.Errorf("StatefulSet %s: nats-server port %d, monitor %d, JetStream %v", s.Name, opts.Port, opts.HTTPPort, opts.JetStream)
		}
		var routes []string
		for _, r := range opts.Routes {
			routes = append(routes, r.Host)
		}
		var want []string
		if n > 1 {
			for i := range n {
				want = append(want, fmt.Sprintf("%s:6222", host(i)))
			}
			if opts.Cluster.Name == "" || opts.Cluster.Port != 6222 || opts.Cluster.Advertise != host(0)+":6222" {
				t.Errorf("StatefulSet %s: cluster %q on port %d advertised as %q", s.Name, opts.Cluster.Name, opts.Cluster.Port, opts.Cluster.Advertise)
			}
		}
		if !slices.Equal(routes, want) {
			t.Errorf("StatefulSet %s: routes %q, want %q", s.Name, routes, want)
		}
	default:
		t.Errorf("StatefulSet %s: runs %s", s.Name, c.Image)
	}
}
