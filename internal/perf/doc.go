// Package perf holds Manifold's performance benchmarks: tools/call through the
// built manifold binary against the same Go fixture server called directly over
// stdio, reported as ratios (p50 latency, throughput) and the proxy's resident
// memory. It has no non-test code and nothing imports it.
package perf
