package naming

import (
	"fmt"
	"slices"
	"strings"
)

// What each MCP client makes of the exposed names behind one entry, as
// observed (December 2026) or documented by the clients: the name the model
// sees, the names it refuses or mangles, and the caps on how many tools it
// takes. [Client.Check] flags, for one client and entry name, every exposed
// name that the client would refuse or mangle and every cap the catalog
// passes; `manifold tools --client` prints it.

// A Client is one MCP client's handling of tool names.
type Client struct {
	// Key is the client's name on the command line, as in `manifold
	// connect` (claude-code, gemini, codex, cursor, vscode, windsurf).
	Key     string
	Title   string
	aliases []string
	// budget returns the longest exposed name that the client takes
	// unchanged with the entry named entry; 0 when it sets none of its own.
	budget func(entry string) int
	check  func(entry string, names []string) []Problem
}

// A Problem is one thing a client would do to the catalog.
type Problem struct {
	// Name is the exposed name concerned; empty for a cap on the whole
	// catalog (too many tools).
	Name string
	// As is the name the client makes of it, where it changes it.
	As string
	// Other is the exposed name it collides with, if any.
	Other string
	// What says what the client does, and why.
	What string
}

// Clients returns the known clients, in a fixed order.
func Clients() []Client {
	return []Client{
		{Key: "claude-code", Title: "Claude Code", aliases: []string{"claude", "claudecode"}, budget: claudeBudget, check: checkClaude},
		{Key: "codex", Title: "Codex", budget: claudeBudget, check: checkCodex},
		{Key: "gemini", Title: "Gemini CLI", aliases: []string{"gemini-cli"}, budget: geminiBudget, check: checkGemini},
		{Key: "cursor", Title: "Cursor", budget: cursorBudget, check: checkCursor},
		{Key: "vscode", Title: "VS Code", aliases: []string{"vs-code", "code", "copilot"}, budget: func(string) int { return MaxNameLen }, check: checkVSCode},
		{Key: "windsurf", Title: "Windsurf", budget: func(string) int { return MaxNameLen }, check: checkWindsurf},
	}
}

// LookupClient finds a client by its key or an alias, in any case.
func LookupClient(name string) (Client, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, c := range Clients() {
		if c.Key == name || slices.Contains(c.aliases, name) {
			return c, true
		}
	}
	return Client{}, false
}

// ClientByInfo finds the client that introduces itself (initialize's or a
// 2026-07-28 request's clientInfo) by name: claude-code, codex-mcp-client
// (Codex's rmcp client), gemini-cli-mcp-client, Visual Studio Code,
// cursor-vscode, Windsurf's.
func ClientByInfo(name string) (Client, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	key := ""
	switch {
	case n == "claude-code":
		key = "claude-code"
	case n == "codex-mcp-client" || strings.HasPrefix(n, "codex"):
		key = "codex"
	case strings.HasPrefix(n, "gemini-cli"):
		key = "gemini"
	case strings.HasPrefix(n, "cursor"):
		key = "cursor"
	case strings.HasPrefix(n, "visual studio code"):
		key = "vscode"
	case strings.HasPrefix(n, "windsurf"):
		key = "windsurf"
	default:
		return Client{}, false
	}
	return LookupClient(key)
}

// ClientKeys returns the keys of the known clients.
func ClientKeys() []string {
	var out []string
	for _, c := range Clients() {
		out = append(out, c.Key)
	}
	return out
}

// Budget returns the longest exposed name the client takes unchanged behind
// the entry named entry (the value of max_name_length that fits it).
func (c Client) Budget(entry string) int { return c.budget(entry) }

// Check returns what the client would do to the exposed tool names behind
// the entry named entry: each name it refuses or mangles, each pair it
// confuses, each cap the catalog passes. Names are checked in sorted order
// and the result is deterministic.
func (c Client) Check(entry string, names []string) []Problem {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	return c.check(entry, names)
}

// The caps and limits, as published or observed.
const (
	modelNameMax   = 64  // model APIs: tool names of at most 64 characters
	geminiNameMax  = 63  // Gemini CLI cuts mcp_<entry>_<name> past this
	cursorNameMax  = 60  // Cursor: server name + tool name
	cursorToolWarn = 40  // Cursor warns past about this many tools
	vscodeToolCap  = 128 // VS Code: tools per request
	windsurfCap    = 100 // Windsurf: MCP tools in all, across every server
)

// claudeName is what Claude Code calls a tool: mcp__<entry>__<name>, the
// entry's characters outside [A-Za-z0-9_-] made "_".
func claudeName(entry, name string) string { return "mcp__" + sanitize(entry) + "__" + name }

func claudeBudget(entry string) int { return modelNameMax - len(claudeName(entry, "")) }

func checkClaude(entry string, names []string) []Problem {
	var out []Problem
	for _, n := range names {
		if full := claudeName(entry, n); len(full) > modelNameMax {
			out = append(out, Problem{Name: n, As: full,
				What: fmt.Sprintf("%d characters: the model API refuses tool names over %d, so the tool fails every request", len(full), modelNameMax)})
		}
	}
	return out
}

// checkCodex: Codex puts the tools in the namespace mcp__<entry> and writes
// "-" as "_", so two names that differ only there are one to it; its
// qualified name is held to the model's 64 as Claude Code's is.
func checkCodex(entry string, names []string) []Problem {
	var out []Problem
	seen := map[string]string{}
	for _, n := range names {
		as := strings.ReplaceAll(n, "-", "_")
		if other, ok := seen[as]; ok {
			out = append(out, Problem{Name: n, As: as, Other: other,
				What: fmt.Sprintf("Codex writes \"-\" as \"_\": %s and %s are both %s to it", other, n, as)})
			continue
		}
		seen[as] = n
	}
	for _, n := range names {
		if full := "mcp__" + strings.ReplaceAll(sanitize(entry), "-", "_") + "__" + strings.ReplaceAll(n, "-", "_"); len(full) > modelNameMax {
			out = append(out, Problem{Name: n, As: full,
				What: fmt.Sprintf("%d characters: over the model API's %d", len(full), modelNameMax)})
		}
	}
	return out
}

// geminiName is what Gemini CLI calls a tool, cut past 63 characters with
// "..." as observed, so names that differ only past the cut are one.
func geminiName(entry, name string) (string, bool) {
	full := "mcp_" + entry + "_" + name
	if len(full) <= geminiNameMax {
		return full, false
	}
	return full[:geminiNameMax-len("...")] + "...", true
}

func geminiBudget(entry string) int { return geminiNameMax - len("mcp_"+entry+"_") }

func checkGemini(entry string, names []string) []Problem {
	var out []Problem
	seen := map[string]string{}
	for _, n := range names {
		as, cutName := geminiName(entry, n)
		other, clash := seen[as]
		switch {
		case clash:
			out = append(out, Problem{Name: n, As: as, Other: other,
				What: fmt.Sprintf("Gemini CLI cuts names past %d characters: %s and %s are both %s to it", geminiNameMax, other, n, as)})
		case cutName:
			out = append(out, Problem{Name: n, As: as,
				What: fmt.Sprintf("Gemini CLI cuts names past %d characters (this one is %d); the model sees the cut name", geminiNameMax, len("mcp_"+entry+"_"+n))})
		}
		if !clash {
			seen[as] = n
		}
	}
	return out
}

func cursorBudget(entry string) int { return cursorNameMax - len(entry) }

func checkCursor(entry string, names []string) []Problem {
	var out []Problem
	for _, n := range names {
		if l := len(entry) + len(n); l > cursorNameMax {
			out = append(out, Problem{Name: n,
				What: fmt.Sprintf("server and tool name together are %d characters: Cursor leaves out tools past %d", l, cursorNameMax)})
		}
	}
	if len(names) > cursorToolWarn {
		out = append(out, Problem{What: fmt.Sprintf("%d tools: Cursor warns past about %d, and the model picks worse among many", len(names), cursorToolWarn)})
	}
	return out
}

func checkVSCode(_ string, names []string) []Problem {
	if len(names) > vscodeToolCap {
		return []Problem{{What: fmt.Sprintf("%d tools: VS Code sends at most %d tools per request and groups the rest into virtual tools", len(names), vscodeToolCap)}}
	}
	return nil
}

func checkWindsurf(_ string, names []string) []Problem {
	if len(names) > windsurfCap {
		return []Problem{{What: fmt.Sprintf("%d tools: Windsurf takes at most %d MCP tools in all, across every server", len(names), windsurfCap)}}
	}
	return nil
}
