package version

import (
	"bytes"
	"flag"
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	info := func(mainVersion string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/dynamo-go/dynamo", Version: mainVersion}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name            string
		version, commit string
		read            func() (*debug.BuildInfo, bool)
		want            Info
	}{
		{"stamped", "v0.4.0", "abc123", info("(devel)", "vcs.revision", "fff"), Info{"v0.4.0", "abc123", "go1.99.1"}},
		{"work tree", "", "", info("(devel)", "vcs.revision", "0123abcd", "vcs.modified", "false"), Info{"devel", "0123abcd", "go1.99.1"}},
		{"dirty work tree", "", "", info("(devel)", "vcs.revision", "0123abcd", "vcs.modified", "true"), Info{"devel", "0123abcd-dirty", "go1.99.1"}},
		{"go install", "", "", info("v1.2.3"), Info{"v1.2.3", Unknown, "go1.99.1"}},
		{"version stamped only", "v0.5.0", "", info("(devel)", "vcs.revision", "beef"), Info{"v0.5.0", "beef", "go1.99.1"}},
		{"no build info", "", "", none, Info{"devel", Unknown, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(tc.version, tc.commit, tc.read)
			if tc.want.GoVersion == "" {
				tc.want.GoVersion = got.GoVersion // runtime.Version()
				if !strings.HasPrefix(got.GoVersion, "go") && !strings.HasPrefix(got.GoVersion, "devel") {
					t.Errorf("GoVersion = %q", got.GoVersion)
				}
			}
			if got != tc.want {
				t.Errorf("get = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{"v0.4.0", "1f2e3d4c", "go1.26.8"}.String("frontend")
	if want := "frontend v0.4.0 (commit 1f2e3d4c, go1.26.8)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestFlagAndPrint(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	v := Flag(fs)
	if err := fs.Parse([]string{"--version"}); err != nil || !*v {
		t.Fatalf("Parse: %v, version %v", err, *v)
	}
	var b bytes.Buffer
	Print(&b, "mocker")
	if got := b.String(); !strings.HasPrefix(got, "mocker ") || !strings.HasSuffix(got, ")\n") || !strings.Contains(got, "(commit ") {
		t.Errorf("Print wrote %q", got)
	}
}
