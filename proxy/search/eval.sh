#!/usr/bin/env bash
# The full retrieval evaluation of issue 12: substring matching, plain BM25,
# our ranker and ours + semantic on the recorded catalog, per split, with every miss of ours,
# and the ranker's benchmarks. Run from anywhere: bash proxy/search/eval.sh
set -euo pipefail
cd "$(dirname "$0")"
go test -count=1 -run 'TestRetrievalReport|TestRetrievalQuality' -v . -args -report
go test -run '^$' -bench . -benchmem .
