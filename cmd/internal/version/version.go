// Package version tells which build of the stack a binary is: the version
// and commit stamped at build time with -ldflags -X (the images of
// deploy/docker are built so), or else what the Go toolchain recorded in
// the binary. Every binary prints it with --version.
package version

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version and Commit are stamped at build time, e.g.
//
//	go build -ldflags "-X github.com/dynamo-go/dynamo/cmd/internal/version.Version=v0.4.0 \
//	  -X github.com/dynamo-go/dynamo/cmd/internal/version.Commit=$(git rev-parse HEAD)" ./cmd/...
//
// Left empty, Get fills them from the binary's build information.
var (
	Version string
	Commit  string
)

// Unknown stands for a version or commit that neither the build stamp nor
// the build information gives.
const Unknown = "unknown"

// Info is the version and commit of a binary.
type Info struct {
	// Version is the stamped version; unstamped, the main module's version
	// (a binary installed with go install module@v1.2.3), or "devel" for
	// a build from a work tree.
	Version string
	// Commit is the stamped commit; unstamped, the vcs.revision the go
	// command recorded (with "-dirty" when the work tree had changes), or
	// Unknown (builds with -buildvcs=false, go run, tests).
	Commit string
	// GoVersion is the Go release the binary was built with.
	GoVersion string
}

// Get returns this binary's Info.
func Get() Info { return get(Version, Commit, debug.ReadBuildInfo) }

// get is Get with the stamps and the build information given.
func get(version, commit string, read func() (*debug.BuildInfo, bool)) Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	bi, ok := read()
	if ok && bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	if i.Version == "" {
		i.Version = "devel"
		if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
	}
	if i.Commit == "" {
		i.Commit = Unknown
		if ok {
			var rev string
			var dirty bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if rev != "" {
				i.Commit = rev
				if dirty {
					i.Commit += "-dirty"
				}
			}
		}
	}
	return i
}

// String is the line --version prints for the command name:
//
//	frontend v0.4.0 (commit 1f2e3d4c, go1.26.8)
func (i Info) String(name string) string {
	return fmt.Sprintf("%s %s (commit %s, %s)", name, i.Version, i.Commit, i.GoVersion)
}

// Flag registers --version on fs. After fs.Parse, a true value means: call
// Print and exit 0.
func Flag(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and commit, and exit")
}

// Print writes Get's line for the command name to w.
func Print(w io.Writer, name string) {
	fmt.Fprintln(w, Get().String(strings.TrimSpace(name)))
}
