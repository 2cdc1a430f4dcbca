#!/usr/bin/env bash
# Builds llama.cpp's llama-server (CPU only) from the source the npm package
# node-llama-cpp ships as llama/gitRelease.bundle, into a cache directory
# keyed by the package's version, and prints the binary's path. A second run
# finds the build and takes no time.
#
#   scripts/llama-server.sh          build if needed, print the path
#   scripts/llama-server.sh --path   print where the binary is (or would be)
#
# Needs npm, git, cmake, ninja (or make) and a C++ compiler. The only
# download is the npm package, from the npm registry.
#
# Environment:
#   NODE_LLAMA_CPP_VERSION  the package version (default 3.21.1)
#   DYN_LLAMA_CACHE         the cache directory (default
#                           ${XDG_CACHE_HOME:-$HOME/.cache}/dynamo-go/llama.cpp)
#   LLAMA_BUILD_JOBS        parallel compile jobs (default: nproc)
set -euo pipefail

version="${NODE_LLAMA_CPP_VERSION:-3.21.1}"
cache="${DYN_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynamo-go/llama.cpp}"
dir="$cache/node-llama-cpp-$version"
bin="$dir/bin/llama-server"

if [ "${1:-}" = "--path" ]; then
	echo "$bin"
	exit 0
fi
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

need() {
	command -v "$1" >/dev/null 2>&1 || {
		echo "scripts/llama-server.sh: $1 is missing (Debian: apt-get install $2)" >&2
		exit 1
	}
}
need npm npm
need git git
need cmake cmake
need c++ g++
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "scripts/llama-server.sh: fetching node-llama-cpp@$version from the npm registry" >&2
(cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
tar -xzf "$work"/node-llama-cpp-"$version".tgz -C "$work" \
	package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
git clone -q "$work/package/llama/gitRelease.bundle" "$work/src" 2>/dev/null
tag="$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$work/package/llama/llama.cpp.info.json")"
echo "scripts/llama-server.sh: building llama-server (llama.cpp $tag, CPU) with $(nproc) cores; this takes minutes" >&2

# CPU only, static, no HTTPS client (LLAMA_CURL for older sources,
# LLAMA_OPENSSL for newer), no web UI (its prebuilt assets would be a
# download), no tests or examples.
cmake -S "$work/src" -B "$work/build" "${generator[@]}" \
	-DCMAKE_BUILD_TYPE=Release \
	-DBUILD_SHARED_LIBS=OFF \
	-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
	-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
	-DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
	-Wno-dev >"$work/cmake.log" 2>&1 || {
	tail -40 "$work/cmake.log" >&2
	exit 1
}
cmake --build "$work/build" --target llama-server -j "${LLAMA_BUILD_JOBS:-$(nproc)}" >"$work/build.log" 2>&1 || {
	tail -40 "$work/build.log" >&2
	exit 1
}

mkdir -p "$dir/bin.tmp"
cp "$work/build/bin/llama-server" "$dir/bin.tmp/"
printf 'node-llama-cpp %s\nllama.cpp %s\n' "$version" "$tag" >"$dir/bin.tmp/VERSION"
rm -rf "$dir/bin"
mv "$dir/bin.tmp" "$dir/bin"
echo "$bin"
