#!/usr/bin/env bash
# Runs the image without a container engine (CI runs this as root): builds
# it (deploy/build-image.sh), extracts its root filesystem, and starts
# /manifold from it in a mount and a pid namespace of its own, chrooted into
# that filesystem mounted read-only, /tmp a tmpfs, as uid/gid 65532 with no
# supplementary groups; it shares the host's network namespace, so it is
# reached on loopback. Then /healthz, /readyz and an MCP initialize over
# streamable HTTP must answer. The config has no upstream: stdio upstreams
# need runtimes that a scratch image does not have.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work="$(mktemp -d)"
pid=""
cleanup() {
	if [ -n "${pid}" ] && kill -0 "${pid}" 2>/dev/null; then
		# unshare --fork ignores SIGTERM while it waits: stop /manifold (its
		# child; it drains and exits), then unshare follows.
		for c in $(pgrep -P "${pid}"); do kill -TERM "${c}" 2>/dev/null || true; done
		for _ in $(seq 100); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "${pid}" 2>/dev/null || true
		wait "${pid}" 2>/dev/null || true
	fi
	rm -rf "${work}"
}
trap cleanup EXIT
bash deploy/build-image.sh manifold:smoke "${work}/image.tar"
(cd deploy/tools && go build -o "${work}/ociimage" ./ociimage)
root="${work}/rootfs"
mkdir -p "${root}"
"${work}/ociimage" check -rootfs "${root}" "${work}/image.tar"
chmod 0755 "${root}"
mkdir -p "${root}/etc/manifold"
printf '# the image smoke test: no upstream\n' >"${root}/etc/manifold/proxy.toml"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
unshare --mount --propagation private bash -c '
	set -e
	root="$1"; port="$2"
	mount --bind "${root}" "${root}"
	mount -o remount,bind,ro "${root}"
	mount -t tmpfs -o mode=1777,size=64m tmpfs "${root}/tmp"
	exec unshare --pid --fork --kill-child --root="${root}" --wd=/ --setuid=65532 --setgid=65532 \
		/manifold serve --config /etc/manifold/proxy.toml --http "127.0.0.1:${port}"
' _ "${root}" "${port}" >"${work}/log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	curl -fsS -m 2 "http://127.0.0.1:${port}/healthz" >/dev/null 2>&1 && break
	kill -0 "${pid}" 2>/dev/null || { cat "${work}/log"; echo "manifold from the image exited" >&2; exit 1; }
	sleep 0.1
done
test "$(curl -fsS -m 5 "http://127.0.0.1:${port}/healthz")" = ok
[[ "$(curl -fsS -m 5 "http://127.0.0.1:${port}/readyz")" == *ready* ]]
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"image-smoke","version":"0"}}}'
reply="$(curl -fsS -m 10 -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	-d "${init}" "http://127.0.0.1:${port}/mcp")"
if ! grep -q '"serverInfo"' <<<"${reply}"; then
	echo "initialize through the image's manifold: ${reply}" >&2
	cat "${work}/log" >&2
	exit 1
fi
child="$(pgrep -P "${pid}" | sed -n 1p)" # unshare's child: /manifold
uid="$(awk '/^Uid:/ {print $2}' "/proc/${child}/status")"
rootopts="$(awk '$5 == "/" {print $6}' "/proc/${child}/mountinfo")"
groups="$(awk '/^Groups:/ {print $2}' "/proc/${child}/status")"
rss="$(awk '/^VmRSS:/ {print $2}' "/proc/${child}/status")"
if [ "${uid}" != 65532 ] || [ -n "${groups}" ] || [[ "${rootopts}" != ro* ]]; then
	echo "manifold from the image runs as uid ${uid} with groups '${groups}' and root mounted ${rootopts}: want uid 65532, no groups, ro" >&2
	exit 1
fi
echo "image smoke ok: /healthz, /readyz and initialize answered by /manifold from the image's root filesystem (mounted ${rootopts%%,*}), as uid ${uid} in a pid namespace of its own; resident ${rss} kB idle without upstreams"
