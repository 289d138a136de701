package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// configKey documents one key of proxy.toml for `manifold help`.
type configKey struct {
	key, where, meaning string
}

// configKeys are proxy.toml's keys, in the order of the README's
// Configuration section.
var configKeys = []configKey{
	{"version", "top level", "Optional; the only version is 1."},
	{"startup_timeout", "top level, server", `Spawn + initialize of a server, a duration like "30s" (default 30s); a server's value overrides the global one.`},
	{"call_timeout", "top level, server", `One call to an upstream, a duration (default 60s).`},
	{"first_list_wait", "top level", `How long a first list waits for servers never listed before (no cached catalog) before answering with those it knows (default: as long as the client allows, by its clientInfo name: 500ms for Codex, 20s for Claude Code, Gemini CLI and opencode, 8s for others); the others join with list_changed.`},
	{"first_list_timeout", "top level", `How long a call to a name not in the catalog yet waits for servers still starting (default 10s).`},
	{"max_message_bytes", "top level, server", "Largest JSON-RPC message accepted, in bytes (default 64 MiB, at least 1 MiB)."},
	{"max_name_length", "top level", `Longest exposed tool or prompt name, 16 to 64 (default 49 = 64 - len("mcp__manifold__")).`},
	{"log_level", "top level", `debug, info, warn or error, on stderr (default info).`},
	{"read_only", "top level, server", "Expose only tools annotated read-only (an unannotated tool is not)."},
	{"pin", "top level, server", `What happens to an upstream definition that is new or changed since it was approved in the lock file: "quarantine" (hidden until manifold approve, the default), "warn" (served, flagged) or "off"; a server's value overrides the global one.`},
	{"lock_file", "top level", `The lock file of approved definitions, relative to the config's folder (default "manifold.lock"; none for a config read from a pipe).`},
	{"confirm_ttl", "top level", `How long a person has to approve a call of a tool with confirm = true, and how long an approve-call approval waits for the retry (default 5m).`},
	{"confirm", "server", `Every call of the server's tools waits for a person's approval of its exact arguments; confirm_reason says why. Also per tool in overrides.TOOL (with reason) and in policy file rules.`},
	{"confirm_reason", "server", "Why the server's calls need approval, shown to the person."},
	{"policy_files", "top level", `Globs of policy files ([rules.NAME] with match/uri, allow/deny, rate, max_result_bytes, call_timeout), relative to the config's folder.`},
	{"http.listen", "[http]", `host:port of manifold serve --http (default "127.0.0.1:7777").`},
	{"http.allowed_hosts", "[http]", "Host headers accepted besides localhost, 127.0.0.1 and [::1]."},
	{"http.allowed_origins", "[http]", "Browser Origins accepted besides loopback ones, as scheme://host[:port]."},
	{"http.max_body_bytes", "[http]", "Largest request body (default 4 MiB, at least 4 KiB); larger: 413."},
	{"http.header_timeout", "[http]", "Time to read a request's headers (default 10s)."},
	{"http.body_timeout", "[http]", "Time to read a request's body (default 30s); slower: 408."},
	{"http.max_sessions", "[http]", "MCP sessions open at once (default 100); beyond: 503."},
	{"http.session_idle_timeout", "[http]", "Close a session idle that long (default 10m)."},
	{"http.max_event_bytes", "[http]", "What the initialize era's streams keep so that a client can resume one that dropped, all sessions together, with the records of streams and events (default 10 MiB, 64 KiB to 1 GiB); past it the oldest events go first. Streams whose answers were delivered to a client still connected keep at most a sixteenth of it, and go before those of calls in flight or of clients that dropped."},
	{"http.drain_grace", "[http]", "After SIGTERM, how long the requests in flight may take before serve --http stops (default 20s); meanwhile /readyz is 503 and new work is refused."},
	{"cluster.redis", "[cluster]", `The Redis that replicas share rate limits, spend caps and approve-call approvals on: "redis://HOST:PORT/DB" (rediss:// for TLS; ${file:} and ${env:} work). Without [cluster], each process counts alone.`},
	{"cluster.key_prefix", "[cluster]", `Start of every key written to Redis (default "manifold:").`},
	{"cluster.on_error", "[cluster]", `Redis unreachable: "closed" refuses the calls whose limits cannot be checked (default), "open" admits them; approvals always fail closed.`},
	{"cluster.timeout", "[cluster]", "One Redis round trip, connecting included (default 250ms)."},
	{"cluster.key", "[cluster]", `The key every replica seals 2026-07-28 requestState and authenticates the answers relayed between replicas with, at least 32 bytes, the same on all: key = "${file:cluster.key}" (openssl rand -base64 32). Required with [cluster] unless [protocol] state_key_file is set.`},
	{"audit.file", "[audit]", `The audit log, one JSON line per call; "-" for stderr.`},
	{"audit.enabled", "[audit]", "Turn the audit log on (default: true when file is set)."},
	{"audit.arguments", "[audit]", "Log the calls' argument values, redacted (default false)."},
	{"command", "server", `A stdio server's program: a bare name looked up in PATH, or a path (relative to the config's folder).`},
	{"args", "server", "Its arguments, an array of strings."},
	{"env", "server", `Variables added to the proxy's environment for it: env = { KEY = "value" }.`},
	{"cwd", "server", "Its working directory (default: the config's folder; for a config given as --config <(…) or /dev/stdin, which has none, the working directory)."},
	{"url", "server", `A remote server's URL (http:// or https://). Exactly one of command and url.`},
	{"headers", "server", `Headers sent to a remote server: headers = { Authorization = "Bearer ${TOKEN}" }.`},
	{"transport", "server", `"streamable" (default) or "sse", for a remote server.`},
	{"prefix", "server", `Namespace of its tool and prompt names (prefix__name) and resource URIs; default the server's name; "" keeps names unchanged.`},
	{"required", "server", "Fail manifold serve when this server cannot start."},
	{"disabled", "server", "Keep the entry, start nothing."},
	{"description", "server", "What the server is for, in one sentence (at most 300 characters): its line in Manifold's instructions and in search."},
	{"instructions", "server", "Add the server's whole initialize instructions after Manifold's summary of servers, when they fit in its 2,000 bytes."},
	{"isolation", "server", `"session": a process per HTTP client session; default "shared".`},
	{"allow_unsolicited", "server", `["sampling"], ["elicitation"] or both: let the server ask its client outside any call.`},
	{"start", "server", `"lazy" starts the server on the first call that needs it; default "eager".`},
	{"idle_timeout", "server", "Stop a server nobody used for that long; the next call starts it again."},
	{"annotations", "server", `"ignore": trust only the overrides' annotations; default "trust".`},
	{"tools.allow", "server", `Globs of the server's own tool names to expose; others are hidden.`},
	{"tools.deny", "server", `Globs of the server's own tool names to hide; deny wins over allow.`},
	{"prompts.allow", "server", "Globs of prompt names to expose."},
	{"prompts.deny", "server", "Globs of prompt names to hide."},
	{"resources.allow", "server", "Globs of resource URIs (canonical) to expose."},
	{"resources.deny", "server", "Globs of resource URIs (canonical) to hide."},
	{"overrides.TOOL", "server", "Per tool: name (the exposed name, as is), title, description, annotations = { readOnlyHint = true, ... }."},
	{"health", "server", `[servers.NAME.health]: tool (with arguments) or resource, expect, interval (30s), timeout, failures (3, then a restart).`},
	{"restart", "server", `[servers.NAME.restart]: enabled (true), initial_backoff (500ms), max_backoff (30s), max_failures (5) within failure_window (1m), failed_retry (5m).`},
	{"plugins.NAME", "[plugins.NAME]", "A plugin: path (the binary), args, env, prefix, sha256, startup_timeout, call_timeout, required, disabled."},
}

const helpUsage = `Usage: manifold help [TOPIC]

Topics:
  config        every key of proxy.toml
  KEY           one key, or the keys whose name contains KEY (startup_timeout, tools, http)
  values        ${VAR} expansion
  COMMAND       the flags of a command (serve, check, import, connect, doctor, ...)
`

// cmdHelp prints the usage, a command's flags or the config keys.
func cmdHelp(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		fmt.Fprint(stdout, "\n"+helpUsage)
		return nil
	}
	topic := strings.ToLower(strings.TrimSpace(args[0]))
	switch topic {
	case "config", "keys", "proxy.toml":
		fmt.Fprintln(stdout, "proxy.toml keys (docs/configuration.md has the details):")
		printKeys(stdout, configKeys)
		return nil
	case "values", "variables", "env-vars", "${var}":
		fmt.Fprint(stdout, `Values: ${VAR} anywhere in a string expands from the environment; ${VAR:-default}
uses the default when VAR is unset or empty; $$ is a literal $. A variable that is unset and
has no default is an error that names it; in a server's env, headers or args it leaves that
server out instead (status shows it misconfigured) and the others serve. manifold import
writes every client's variable syntax this way (${env:X}, $X, ${input:ID}).
`)
		return nil
	}
	for _, c := range commands() {
		if c.name == topic && c.name != "help" && c.name != "version" {
			return c.run(ctx, []string{"--help"}, nil, stdout, stdout)
		}
	}
	var match []configKey
	for _, k := range configKeys {
		if k.key == topic {
			match = []configKey{k}
			break
		}
		if strings.Contains(k.key, topic) {
			match = append(match, k)
		}
	}
	if len(match) == 0 {
		fmt.Fprint(stderr, helpUsage)
		return usageError("help: no topic or config key %q; manifold help config lists the keys", args[0])
	}
	printKeys(stdout, match)
	return nil
}

func printKeys(w io.Writer, keys []configKey) {
	for _, k := range keys {
		fmt.Fprintf(w, "  %-26s %-18s %s\n", k.key, k.where, k.meaning)
	}
}
