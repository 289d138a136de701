#!/usr/bin/env bash
# Builds the Manifold image without a container engine: the static binary
# (CGO_ENABLED=0) as the one layer of an empty base, user 65532, entrypoint
# /manifold (what deploy/Dockerfile's FROM scratch builds), written as a
# tarball by deploy/tools/ociimage and checked (no root, no shell, a static
# binary alone). With a Docker engine that answers, the image is loaded into
# it too.
#
#   deploy/build-image.sh [TAG] [OUT.tar]      default manifold:dev, manifold-image.tar
#
# Push it with `crane push OUT.tar REGISTRY/manifold:TAG` or
# `skopeo copy docker-archive:OUT.tar docker://REGISTRY/manifold:TAG`, or
# `docker load -i OUT.tar`. With an engine, `docker build` on
# deploy/Dockerfile makes the same image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tag="${1:-manifold:dev}"
out="$(realpath -m "${2:-manifold-image.tar}")"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "${work}/manifold" ./cmd/manifold
(cd deploy/tools && go build -o "${work}/ociimage" ./ociimage)
"${work}/ociimage" build -binary "${work}/manifold" -tag "${tag}" -o "${out}"
"${work}/ociimage" check "${out}"
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
	docker load -i "${out}"
fi
