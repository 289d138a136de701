package config

import (
	"fmt"
	"strings"
)

// Other MCP clients' config formats (Claude's and Cursor's mcpServers JSON,
// Codex's config.toml, Gemini CLI's settings, Cline's, Windsurf's...) have
// keys of their own that people carry over. Each gets a message that says
// what the Manifold key is, or that none is needed.

// foreignServerKey is the hint for an unknown key of a [servers.NAME] table.
func foreignServerKey(name string, v any) string {
	str, _ := v.(string)
	switch name {
	case "type", "transportType":
		switch strings.ToLower(str) {
		case "stdio":
			return `not needed: a server with command is stdio; remove it`
		case "http", "streamable-http", "streamable_http", "streamablehttp", "streamable":
			return `not needed: a server with url speaks streamable HTTP; remove it`
		case "sse":
			return `write transport = "sse" (next to url) instead`
		}
		return `not needed: a server with command is stdio, one with url is remote (transport = "streamable" or "sse"); remove it`
	case "startup_timeout_sec", "startup_timeout_ms", "startupTimeout":
		return "write startup_timeout = " + durationFor(name, v) + " instead (a duration with a unit)"
	case "tool_timeout_sec", "timeout", "requestTimeout", "request_timeout":
		return "write call_timeout = " + durationFor(name, v) + " instead (a duration with a unit; startup_timeout bounds the start)"
	case "disabled_tools", "disabledTools", "excludeTools", "exclude_tools":
		return "write tools.deny = [...] instead (globs of the server's own tool names)"
	case "enabled_tools", "enabledTools", "includeTools", "include_tools":
		return "write tools.allow = [...] instead (globs of the server's own tool names)"
	case "httpUrl", "serverUrl", "http_url", "server_url", "uri", "endpoint":
		if str != "" {
			return fmt.Sprintf("write url = %q instead", str)
		}
		return "write url = \"https://...\" instead"
	case "autoApprove", "alwaysAllow", "auto_approve", "always_allow", "trust":
		return "not needed: Manifold approves no call itself (your client asks); to choose which tools exist, write tools.allow or tools.deny"
	case "enabled":
		if b, ok := v.(bool); ok && !b {
			return "write disabled = true instead"
		}
		return "not needed: a server is enabled unless disabled = true; remove it"
	case "environment", "envs", "env_vars", "envVars":
		return `write env = { KEY = "value" } instead`
	case "http_headers", "httpHeaders", "requestInit":
		return `write headers = { Name = "value" } instead`
	case "bearer_token_env_var":
		if str == "" {
			str = "TOKEN"
		}
		return fmt.Sprintf(`write headers = { Authorization = "Bearer ${%s}" } instead`, str)
	case "working_directory", "workingDirectory", "workingDir", "cwd_path":
		return "write cwd = \"...\" instead"
	}
	return ""
}

// foreignTopKey is the hint for an unknown top-level key.
func foreignTopKey(name string, _ any) string {
	switch name {
	case "mcpServers", "mcp_servers", "mcp-servers", "context_servers":
		return fmt.Sprintf("Manifold's servers are [servers.NAME] tables: write [servers.NAME] instead of [%s.NAME]", name)
	}
	return ""
}

// durationFor writes the number v of a foreign timeout key as a duration
// string: in seconds (Codex's *_sec, Cline's timeout), or in milliseconds
// for a name ending in _ms, a camelCase one, or a bare timeout of 1000 or
// more (Gemini CLI's).
func durationFor(name string, v any) string {
	n, ok := v.(int64)
	if !ok {
		if f, isFloat := v.(float64); isFloat {
			n, ok = int64(f), true
		}
	}
	if !ok {
		return `"30s"`
	}
	if strings.HasSuffix(name, "_ms") || name == "timeout" && n >= 1000 || name == "startupTimeout" || name == "requestTimeout" {
		return fmt.Sprintf(`"%dms"`, n)
	}
	return fmt.Sprintf(`"%ds"`, n)
}
