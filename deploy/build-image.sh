#!/usr/bin/env bash
# Builds the static manifold binary and the image of deploy/Dockerfile
# (FROM scratch: no base image is pulled). Usage: deploy/build-image.sh [TAG]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tag="${1:-manifold:dev}"
ctx="$(mktemp -d)"
trap 'rm -rf "${ctx}"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "${ctx}/manifold" ./cmd/manifold
cp deploy/Dockerfile "${ctx}/Dockerfile"
docker build -t "${tag}" "${ctx}"
