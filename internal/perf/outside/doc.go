// Package outside measures an MCP endpoint as an outside client sees it:
// a go-sdk client (empty capabilities, an http.Transport keeping up to 512
// idle connections per host) makes warm-up calls, sequential tools/call and
// then calls from several workers sharing its one session, over stdio or
// streamable HTTP, and reads the CPU time and context switches the
// endpoint's process spent. It serves internal/perf's BenchmarkOutside and
// the comparison script internal/perf/compare; it must not import any of
// Manifold's own packages (it measures the binary from outside) and is
// never linked into manifold.
package outside
