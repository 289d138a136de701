// Package plugins hosts Manifold's local-tool plugins: programs, built with
// plugins/sdk, that serve tools to the proxy over hashicorp/go-plugin.
//
// It defines the wire contract between host and plugin ([LocalTools], gRPC
// with JSON messages, versioned by [ContractVersion] in the go-plugin
// handshake), and the host side: a [Host] starts a plugin process on Dial and
// presents the plugin's tools as an MCP server on an in-memory transport, so
// that the proxy reaches a plugin as one more upstream and namespacing,
// policy, audit and relays have one code path for every backend.
//
// A plugin process gets only the environment it is given, never the proxy's
// stdin (in stdio mode that is the client's MCP stream), and nothing it
// prints reaches the proxy's stdout: its log lines and output go to the
// logger, tagged with its name. It runs in its own process group, dies with
// the proxy (on Linux even when the proxy is killed by SIGKILL; elsewhere the
// SDK's parent watchdog ends it), and when it exits what it started is killed.
//
// The package must not import the proxy, the config schema (internal/config)
// or TOML: the command wires plugins in with typed [Options]
// (internal/archtest enforces this). It does not restart a plugin that
// crashed: it ends the connection, and the caller dials again.
package plugins
