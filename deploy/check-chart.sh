#!/usr/bin/env bash
# Validates the Helm chart offline: helm lint (strict) and helm template with
# the chart's defaults and with deploy/kubernetes/values.yaml (every value
# set), each rendering checked by kubecheck (deploy/tools/kubecheck: strict
# decoding into the k8s.io/api types, as the API server's strict field
# validation does), and the committed plain manifests
# deploy/kubernetes/manifold.yaml compared with what the chart renders.
#
#   deploy/check-chart.sh           check (CI runs this)
#   deploy/check-chart.sh --write   render deploy/kubernetes/manifold.yaml anew
#
# helm is built from the Go module proxy (go install) into a cache folder
# outside the work tree, once per version; kubecheck is built from
# deploy/tools (its own module, so the main go.mod stays lean).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

HELM_VERSION=v3.22.0
cache="${MANIFOLD_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/manifold-tools}"
helm="${cache}/helm-${HELM_VERSION}/helm"
if [ ! -x "${helm}" ]; then
	echo "building helm ${HELM_VERSION} into ${helm%/helm} (once)"
	start=${SECONDS}
	GOBIN="${helm%/helm}" go install "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
	echo "helm built in $((SECONDS - start))s"
fi
kubecheck="${cache}/kubecheck"
(cd deploy/tools && go build -o "${kubecheck}" ./kubecheck)

chart=deploy/helm/manifold
full=deploy/kubernetes/values.yaml
manifests=deploy/kubernetes/manifold.yaml
out="$(mktemp -d)"
trap 'rm -rf "${out}"' EXIT

render() { # render VALUES_FILE...: the plain manifests, with their header
	echo "# Rendered from deploy/helm/manifold with deploy/kubernetes/values.yaml"
	echo "# by deploy/check-chart.sh --write; do not edit (CI compares them)."
	"${helm}" template manifold "${chart}" --namespace manifold "$@"
}

if [ "${1:-}" = "--write" ]; then
	render -f "${full}" >"${manifests}"
	echo "wrote ${manifests}"
fi

"${helm}" lint --strict "${chart}"
"${helm}" lint --strict "${chart}" -f "${full}"
"${helm}" template manifold "${chart}" >"${out}/default.yaml"
render -f "${full}" >"${out}/full.yaml"
"${kubecheck}" "${out}/default.yaml" "${out}/full.yaml" "${manifests}"
if ! diff -u "${manifests}" "${out}/full.yaml"; then
	echo "${manifests} is not what the chart renders: run deploy/check-chart.sh --write and commit it" >&2
	exit 1
fi
echo "chart ok: lint, template (defaults and ${full}), kubecheck, ${manifests} up to date"
