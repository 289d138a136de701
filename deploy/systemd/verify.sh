#!/usr/bin/env bash
# Checks deploy/systemd/manifold.service offline: `systemd-analyze verify`
# (which exits 0 on unknown keys and bad values, so any line it prints
# fails here) and `systemd-analyze security --offline` with an exposure of
# at most 2.0 (--threshold counts tenths). Usage: deploy/systemd/verify.sh MANIFOLD_BINARY
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
bin="$(realpath "${1:?usage: verify.sh MANIFOLD_BINARY}")"
dir="$(mktemp -d)"
trap 'rm -rf "${dir}"' EXIT
# verify wants the ExecStart binary to exist: point it at the one given.
sed "s#/usr/local/bin/manifold#${bin}#" manifold.service >"${dir}/manifold.service"
out="$(systemd-analyze verify "${dir}/manifold.service" 2>&1)"
if [ -n "${out}" ]; then
	echo "systemd-analyze verify deploy/systemd/manifold.service:" >&2
	echo "${out}" >&2
	exit 1
fi
systemd-analyze security --offline=yes --threshold=20 "${dir}/manifold.service" | tail -1
echo "manifold.service ok"
