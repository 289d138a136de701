// Package perf holds Manifold's performance benchmarks: tools/call through the
// built manifold binary against the same Go fixture server called directly over
// stdio, reported as ratios (p50 latency, throughput) and the proxy's resident
// memory. It has no non-test code and nothing imports it. The outside
// client of issue 42 (BenchmarkOutside) is package outside below it, which
// the comparison script internal/perf/compare runs too.
package perf
