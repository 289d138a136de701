#!/usr/bin/env bash
# Adapter that lets the conformance suite's client scenarios (auth/*) drive
# Manifold as the OAuth client of a remote upstream:
#
#   node dist/index.js client --command "bash conformance/oauth-client.sh" --scenario auth/metadata-default
#
# The suite appends the URL of its protected MCP server. This script writes a
# proxy.toml with that URL as [servers.up] (auth = "oauth"; the client id and
# secret of MCP_CONFORMANCE_CONTEXT when the scenario gives them; the suite's
# Client ID Metadata Document URL), runs `manifold login up`, plays the
# browser by following the printed link with curl (the suite's authorization
# endpoint redirects at once), then lists and calls the upstream's tools with
# the stored credential (`manifold tools`, `manifold call`; a step-up that
# `manifold call` runs prints a link too, and the "browser" follows it).
#
# Needs MANIFOLD_BIN (the built binary) and NODE (to read the context JSON).
set -euo pipefail
url="${!#}"
: "${MANIFOLD_BIN:?set MANIFOLD_BIN to the manifold binary}"
node="${NODE:-node}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
head -c 48 /dev/urandom | base64 >"${work}/token.key"
chmod 600 "${work}/token.key"

ctx="${MCP_CONFORMANCE_CONTEXT:-}"
field() { [[ -n "${ctx}" ]] && "${node}" -e 'const c=JSON.parse(process.argv[1]);process.stdout.write(String(c[process.argv[2]]??""))' "${ctx}" "$1" || true; }
client_id="$(field client_id)"
client_secret="$(field client_secret)"

{
	printf 'pin = "off"\n\n[tokens]\ndir = "tokens"\nkey = "${file:token.key}"\n\n'
	printf '[servers.up]\nurl = "%s"\nauth = "oauth"\n[servers.up.oauth]\n' "${url}"
	printf 'client_metadata_url = "https://conformance-test.local/client-metadata.json"\n'
	[[ -n "${client_id}" ]] && printf 'client_id = "%s"\n' "${client_id}"
	[[ -n "${client_secret}" ]] && printf 'client_secret = "%s"\n' "${client_secret}"
	true
} >"${work}/proxy.toml"

# browse plays the browser: it echoes each line of its input to stderr
# (prefixed with $1) and follows each link in it to the callback.
browse() {
	while IFS= read -r line; do
		echo "$1: ${line}" >&2
		link="$(sed -n 's/^ *\(https\?:\/\/.*\)$/\1/p' <<<"${line}")"
		if [[ -n "${link}" ]]; then
			curl -sS -L --max-time 15 -o /dev/null "${link}" || echo "browser: could not follow the link" >&2
		fi
	done
}

# login prints the link on stderr; the "browser" follows it to the callback.
"${MANIFOLD_BIN}" login up --config "${work}/proxy.toml" --timeout 20s 2>&1 | browse login
[[ "${PIPESTATUS[0]}" -eq 0 ]] || exit 1

"${MANIFOLD_BIN}" tools --config "${work}/proxy.toml" >"${work}/tools.txt"
cat "${work}/tools.txt" >&2
tool="$(grep -o 'up__[A-Za-z0-9_-]*' "${work}/tools.txt" | head -1 || true)"
if [[ -n "${tool}" ]]; then
	# A 403 insufficient_scope makes call log in again (step-up): its link
	# comes on stderr, and the result on stdout.
	{ "${MANIFOLD_BIN}" call --config "${work}/proxy.toml" "${tool}" '{}' 2>&1 1>&3 | browse call; } 3>&2 || true
fi
