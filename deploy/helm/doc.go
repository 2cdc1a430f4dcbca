// Package helm holds the stack's Helm chart (dynamo-go/) and the tests
// that render it with Helm's own Go library, for the default values and
// for the value files in testdata/, and check what comes out: every
// object decodes strictly into its Kubernetes API type, selectors and
// ports meet, pods run non-root on a read-only root file system, probes
// are where the binaries answer, the termination grace covers the drain,
// and every command line is one the built binaries (and etcd's and NATS's
// own flag parsers) accept.
//
// The plain manifests in deploy/k8s are the chart rendered with its
// defaults; regenerate them with
//
//	go test ./deploy/helm -run TestPlainManifests -update
//
// (TestPlainManifests fails while they differ from the chart).
package helm
