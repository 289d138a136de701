// Package e2e holds Manifold's end-to-end tests: they build the real
// `manifold` binary and the Go fixture server (testdata/fixture), write
// proxy.toml files into temporary folders, run `manifold serve` over stdio
// and streamable HTTP, and talk to it as a client would (with the go-sdk
// client, or with raw JSON-RPC lines when the wire bytes matter). They also
// run the npm reference servers (server-filesystem, server-memory,
// server-everything) from the module's node_modules/.bin, never through npx,
// so they never reach the network; those tests are skipped when `npm ci` has
// not been run (MANIFOLD_E2E_NODE_MODULES may point at another
// node_modules folder).
//
// The package is test-only: it exports nothing, and nothing may import it. It
// must not reach into the other packages' internals; everything it checks is
// observable from outside the binary (protocol frames, exit statuses, stderr,
// and the processes under /proc).
package e2e
