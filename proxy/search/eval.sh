#!/usr/bin/env bash
# The full retrieval evaluation of issue 12: substring matching, plain BM25,
# our ranker, ours + semantic and ours + semantic + the sentence encoder (internal/encoder,
# which embeds all 456 tools: minutes of CPU) on the recorded catalog, per split, with every
# miss of ours, the encoder's cost, and the ranker's benchmarks.
# Run from anywhere: bash proxy/search/eval.sh
set -euo pipefail
cd "$(dirname "$0")"
go test -count=1 -timeout 60m -run 'TestRetrievalReport|TestRetrievalQuality' -v . -args -report
go test -run '^$' -bench . -benchmem .
