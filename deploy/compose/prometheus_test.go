package compose

import (
	"fmt"
	"net"
	"os"
	"testing"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	yamlv2 "go.yaml.in/yaml/v2"
)

// The Prometheus configuration is read the way Prometheus's own
// config.Load reads it, for the part of the format it uses: strict YAML
// (go.yaml.in/yaml/v2, the library and mode Prometheus uses: an unknown
// or misspelt key is an error) into Prometheus's own types from
// github.com/prometheus/common, which the stack already depends on
// (model.Duration, model.LabelSet, config.HTTPClientConfig with its
// Validate), plus the rules config.Load adds for these fields (unique
// job names, a timeout no longer than the interval, host:port targets).
// The module of config.Load itself, github.com/prometheus/prometheus,
// brings the AWS, Azure and Google Cloud SDKs (about 600 packages) and
// newer OpenTelemetry, gRPC and zap into the build of every binary: too
// much for one test.

type promConfig struct {
	Global        promGlobal      `yaml:"global"`
	ScrapeConfigs []*scrapeConfig `yaml:"scrape_configs"`
}

type promGlobal struct {
	ScrapeInterval     model.Duration `yaml:"scrape_interval,omitempty"`
	ScrapeTimeout      model.Duration `yaml:"scrape_timeout,omitempty"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval,omitempty"`
	ExternalLabels     model.LabelSet `yaml:"external_labels,omitempty"`
}

type scrapeConfig struct {
	JobName          string                      `yaml:"job_name"`
	ScrapeInterval   model.Duration              `yaml:"scrape_interval,omitempty"`
	ScrapeTimeout    model.Duration              `yaml:"scrape_timeout,omitempty"`
	MetricsPath      string                      `yaml:"metrics_path,omitempty"`
	Scheme           string                      `yaml:"scheme,omitempty"`
	HonorLabels      bool                        `yaml:"honor_labels,omitempty"`
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:",inline"`
	StaticConfigs    []staticConfig              `yaml:"static_configs,omitempty"`
}

type staticConfig struct {
	Targets []string       `yaml:"targets"`
	Labels  model.LabelSet `yaml:"labels,omitempty"`
}

// loadPrometheusConfig reads and checks a Prometheus configuration file.
func loadPrometheusConfig(t *testing.T, path string) *promConfig {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parsePrometheusConfig(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

func parsePrometheusConfig(b []byte) (*promConfig, error) {
	var cfg promConfig
	if err := yamlv2.UnmarshalStrict(b, &cfg); err != nil {
		return nil, err
	}
	g := &cfg.Global
	if g.ScrapeInterval == 0 {
		g.ScrapeInterval = model.Duration(60e9) // Prometheus's defaults
	}
	if g.ScrapeTimeout == 0 {
		g.ScrapeTimeout = min(model.Duration(10e9), g.ScrapeInterval)
	}
	if g.ScrapeTimeout > g.ScrapeInterval {
		return nil, fmt.Errorf("global scrape_timeout %v greater than scrape_interval %v", g.ScrapeTimeout, g.ScrapeInterval)
	}
	jobs := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName == "" {
			return nil, fmt.Errorf("a scrape config without job_name")
		}
		if jobs[sc.JobName] {
			return nil, fmt.Errorf("job_name %q twice", sc.JobName)
		}
		jobs[sc.JobName] = true
		interval, timeout := sc.ScrapeInterval, sc.ScrapeTimeout
		if interval == 0 {
			interval = g.ScrapeInterval
		}
		if timeout == 0 {
			timeout = min(g.ScrapeTimeout, interval)
		}
		if timeout > interval {
			return nil, fmt.Errorf("job %q: scrape_timeout %v greater than scrape_interval %v", sc.JobName, timeout, interval)
		}
		if sc.Scheme != "" && sc.Scheme != "http" && sc.Scheme != "https" {
			return nil, fmt.Errorf("job %q: scheme %q", sc.JobName, sc.Scheme)
		}
		if err := sc.HTTPClientConfig.Validate(); err != nil {
			return nil, fmt.Errorf("job %q: %w", sc.JobName, err)
		}
		if len(sc.StaticConfigs) == 0 {
			return nil, fmt.Errorf("job %q: no targets", sc.JobName)
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				if _, _, err := net.SplitHostPort(target); err != nil {
					return nil, fmt.Errorf("job %q: target %q: %w", sc.JobName, target, err)
				}
			}
			if err := st.Labels.Validate(); err != nil {
				return nil, fmt.Errorf("job %q: %w", sc.JobName, err)
			}
		}
	}
	return &cfg, nil
}

// The checks bite: mistakes config.Load refuses are refused here too.
func TestPrometheusConfigParserRefuses(t *testing.T) {
	for _, bad := range []string{
		"scrape_configs: [{job_name: a, static_configs: [{targets: [x:1]}], scrape_intervall: 5s}]",                              // misspelt key
		"global: {scrape_interval: 5 seconds}",                                                                                   // not a duration
		"scrape_configs: [{job_name: a, static_configs: [{targets: [x:1]}]}, {job_name: a, static_configs: [{targets: [y:1]}]}]", // twice
		"scrape_configs: [{job_name: a, scrape_interval: 5s, scrape_timeout: 10s, static_configs: [{targets: [x:1]}]}]",
		"scrape_configs: [{job_name: a, static_configs: [{targets: [x]}]}]",                      // no port
		"scrape_configs: [{job_name: a, static_configs: [{targets: [x:1], labels: {\"\": v}}]}]", // an empty label name
		"scrape_configs: [{job_name: a, basic_auth: {username: u, password: p}, bearer_token: t, static_configs: [{targets: [x:1]}]}]",
	} {
		if _, err := parsePrometheusConfig([]byte(bad)); err == nil {
			t.Errorf("accepted: %s", bad)
		}
	}
}
