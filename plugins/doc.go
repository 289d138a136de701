// Package plugins will host Manifold's local-tool plugins: it starts plugin binaries
// with hashicorp/go-plugin, defines the wire contract between host and plugin, and
// presents a plugin's tools as an MCP server on an in-memory transport, so the proxy
// reaches every plugin as one more upstream.
//
// It must not import the proxy, the config schema (internal/config) or TOML: the
// command wires plugins in with typed options (internal/archtest enforces this).
// The host and contract are upcoming; plugins/sdk will serve plugin authors.
package plugins
