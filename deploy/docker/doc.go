// Package docker holds the stack's container images (Dockerfile: the
// targets frontend, mocker and worker) and the tests that keep them
// buildable and safe without a Docker engine: the Dockerfile parses with
// BuildKit's own parser, its base images are pinned by digest, every image
// runs as a non-root user with no HEALTHCHECK, the -X flags it stamps name
// the variables --version prints, and the binaries build with cgo off.
package docker
