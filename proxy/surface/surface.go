package surface

import "github.com/manifold-mcp/manifold/policy"

// This file holds the search surface: which tool list each client gets
// (its catalog mode), and the five meta-tools a search-mode client gets
// instead of the whole catalog. A client that loads every tool into its
// context (VS Code, Cursor, Gemini CLI, Windsurf) is served, once the
// catalog is large, search_tools, describe_tools and one call tool per
// annotation class; a client that defers tools behind a search of its own
// (Claude Code, Codex) gets the full list, since two searches stacked make
// agents skip one or search twice. The mode is decided once per session and
// kept: nothing changes a session's tools/list but a real catalog change.
// Search is call-through: the call tools route the inner call through the
// root's call path, so routing, policy, limits, progress, cancellation and
// audit are those of a direct call.

// Catalog modes.
const (
	ModeAuto   = "auto"
	ModeFull   = "full"
	ModeSearch = "search"
)

// DefaultSearchAbove is Options.SearchAbove's default.
const DefaultSearchAbove = 40

// The meta-tools' names. They are fixed: models and tests know them.
const (
	ToolSearch           = "search_tools"
	ToolDescribe         = "describe_tools"
	ToolCallRead         = "call_tool_read"
	ToolCallWrite        = "call_tool_write"
	ToolCallDestructive  = "call_tool_destructive"
	SearchDefaultLimit   = 8
	SearchMaxLimit       = 20
	DescribeMaxNames     = 5
	SearchMaxQueryLength = 1000
)

// MetaTools are the meta-tools in the order they are listed.
var MetaTools = []string{ToolSearch, ToolDescribe, ToolCallRead, ToolCallWrite, ToolCallDestructive}

// deferringClients are the clientInfo names of clients known to defer MCP
// tools behind a search of their own: auto gives them the full list.
// Codex sends "codex-mcp-client" (its rmcp client's clientInfo).
var deferringClients = []string{"claude-code", "codex-mcp-client"}

// Options says which tool list each client gets (the root's
// CatalogOptions).
type Options struct {
	// Mode is ModeAuto, ModeFull or ModeSearch. If empty, ModeFull: every
	// client gets every visible tool.
	Mode string
	// SearchAbove: ModeAuto serves the search surface only when more
	// tools than this are visible. If zero, DefaultSearchAbove; if
	// negative, at any size.
	SearchAbove int
	// Always are exposed tool names listed beside the meta-tools in search
	// mode. A name that is not a visible tool is left out and logged once,
	// naming AlwaysAt (where the list is configured, "proxy.toml:12:
	// catalog.always"; if empty, "catalog.always").
	Always   []string
	AlwaysAt string
	// Clients give a mode per client, by clientInfo name (case-insensitive;
	// a glob of package policy); the first match wins. A client that
	// matches none gets Mode.
	Clients []ClientMode
	// Identities give a mode per HTTP identity (policy.ParsePrincipal's
	// "group:eng", "user:…", "key:…"); the first the caller is wins, over
	// Clients. The anonymous identity is none of them.
	Identities []IdentityMode
	// Encoder: search also ranks with the sentence encoder
	// (proxy/search/embedcache). The tools' embeddings are built in the
	// background from a catalog's first search on; until they are all
	// ready, search is lexical, and never waits. EncoderCache is the
	// folder they are cached in ("" keeps them in memory only).
	Encoder      bool
	EncoderCache string
}

// IdentityMode is one entry of Options.Identities.
type IdentityMode struct {
	Who  policy.Principal
	Mode string // ModeAuto, ModeFull or ModeSearch
}

// ClientMode is one entry of Options.Clients.
type ClientMode struct {
	Name string // a clientInfo name or glob, compared case-insensitively
	Mode string // ModeAuto, ModeFull or ModeSearch
}
