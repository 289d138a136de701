// Package clientconf reads and writes the MCP configuration files of the
// clients Manifold serves: Claude Desktop, Claude Code, Cursor, VS Code,
// Windsurf, Codex, Gemini CLI and Zed.
//
// It knows where each client keeps its files and in which scopes
// ([Locations]), parses their server entries into one neutral [Entry]
// ([ParseFile]), renders entries as proxy.toml tables and merges them into an
// existing proxy.toml textually, keeping its comments and order ([Merge]),
// and edits a client's file to add, replace or remove one server entry while
// leaving every other byte as it was ([Connect]).
//
// Client files are untrusted input: the package bounds their size and depth,
// never copies an inline secret into proxy.toml (it becomes a ${VAR} with a
// note naming the variable) and never puts a secret in a note. It does no I/O
// besides reading the files it is given; writing, backups and undo are
// cmd/manifold's.
package clientconf

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Client names one MCP client, as written on the command line.
type Client string

// The clients, in the order they are listed.
const (
	ClaudeDesktop Client = "claude-desktop"
	ClaudeCode    Client = "claude-code"
	Cursor        Client = "cursor"
	VSCode        Client = "vscode"
	Windsurf      Client = "windsurf"
	Codex         Client = "codex"
	Gemini        Client = "gemini"
	Zed           Client = "zed"
)

// Clients are all known clients, in listing order.
var Clients = []Client{ClaudeDesktop, ClaudeCode, Cursor, VSCode, Windsurf, Codex, Gemini, Zed}

// Title is the client's name for people.
func (c Client) Title() string {
	switch c {
	case ClaudeDesktop:
		return "Claude Desktop"
	case ClaudeCode:
		return "Claude Code"
	case Cursor:
		return "Cursor"
	case VSCode:
		return "VS Code"
	case Windsurf:
		return "Windsurf"
	case Codex:
		return "Codex"
	case Gemini:
		return "Gemini CLI"
	case Zed:
		return "Zed"
	}
	return string(c)
}

// ParseClient returns the client named s, accepting a few common spellings
// ("claude", "code", "gemini-cli").
func ParseClient(s string) (Client, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "claude-desktop", "claude_desktop", "claudedesktop", "desktop", "claude":
		return ClaudeDesktop, nil
	case "claude-code", "claude_code", "claudecode":
		return ClaudeCode, nil
	case "cursor":
		return Cursor, nil
	case "vscode", "vs-code", "code", "copilot":
		return VSCode, nil
	case "windsurf", "codeium":
		return Windsurf, nil
	case "codex", "codex-cli":
		return Codex, nil
	case "gemini", "gemini-cli", "gemini_cli":
		return Gemini, nil
	case "zed":
		return Zed, nil
	}
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = string(c)
	}
	return "", fmt.Errorf("%q is not a client Manifold knows; use one of %s", s, strings.Join(names, ", "))
}

// Scope is where a client file applies.
type Scope string

// Scopes of client files.
const (
	ScopeUser    Scope = "user"    // the user's own file, for every project
	ScopeProject Scope = "project" // a file in the project, shared with it
	ScopeLocal   Scope = "local"   // Claude Code: one project, kept in ~/.claude.json
	ScopeSystem  Scope = "system"  // Gemini CLI: the machine's settings
)

// Location is one client file.
type Location struct {
	Client Client
	Scope  Scope
	// Path is the absolute path of the file.
	Path string
}

// Env is what the file locations depend on. [OSEnv] fills it from the
// running process; tests fill it by hand.
type Env struct {
	// OS is runtime.GOOS: "darwin", "windows" or anything else (Linux and
	// the other Unixes).
	OS string
	// Home is the user's home folder; Cwd the project folder (the current
	// directory). Both absolute.
	Home, Cwd string
	// AppData is %APPDATA% (Windows); XDGConfigHome is $XDG_CONFIG_HOME.
	// If empty, their defaults under Home.
	AppData, XDGConfigHome string
	// CodexHome is $CODEX_HOME; if empty, Home/.codex.
	CodexHome string
	// ClaudeConfigDir is $CLAUDE_CONFIG_DIR; if empty, Claude Code keeps
	// Home/.claude.json.
	ClaudeConfigDir string
}

// OSEnv returns the Env of the running process.
func OSEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("find the home folder: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return Env{}, fmt.Errorf("find the current folder: %w", err)
	}
	return Env{
		OS: runtime.GOOS, Home: home, Cwd: cwd,
		AppData: os.Getenv("APPDATA"), XDGConfigHome: os.Getenv("XDG_CONFIG_HOME"),
		CodexHome: os.Getenv("CODEX_HOME"), ClaudeConfigDir: os.Getenv("CLAUDE_CONFIG_DIR"),
	}, nil
}

func (e Env) join(elem ...string) string {
	if e.OS == "windows" {
		return strings.Join(elem, `\`)
	}
	return filepath.Join(elem...)
}

func (e Env) appData() string {
	if e.AppData != "" {
		return e.AppData
	}
	return e.join(e.Home, "AppData", "Roaming")
}

func (e Env) xdgConfig() string {
	if e.XDGConfigHome != "" {
		return e.XDGConfigHome
	}
	return e.join(e.Home, ".config")
}

// ClaudeJSON is the path of Claude Code's ~/.claude.json.
func (e Env) ClaudeJSON() string {
	if e.ClaudeConfigDir != "" {
		return e.join(e.ClaudeConfigDir, ".claude.json")
	}
	return e.join(e.Home, ".claude.json")
}

// Locations returns the files of client c, user scope first. Claude Code's
// ~/.claude.json holds two scopes (user, and local per project); it is
// listed once, as ScopeUser, and [ParseFile] reads both.
func Locations(c Client, e Env) []Location {
	user := func(p string) Location { return Location{Client: c, Scope: ScopeUser, Path: p} }
	project := func(p string) Location { return Location{Client: c, Scope: ScopeProject, Path: p} }
	switch c {
	case ClaudeDesktop:
		switch e.OS {
		case "darwin":
			return []Location{user(e.join(e.Home, "Library", "Application Support", "Claude", "claude_desktop_config.json"))}
		case "windows":
			return []Location{user(e.join(e.appData(), "Claude", "claude_desktop_config.json"))}
		}
		return []Location{user(e.join(e.xdgConfig(), "Claude", "claude_desktop_config.json"))}
	case ClaudeCode:
		return []Location{user(e.ClaudeJSON()), project(e.join(e.Cwd, ".mcp.json"))}
	case Cursor:
		return []Location{user(e.join(e.Home, ".cursor", "mcp.json")), project(e.join(e.Cwd, ".cursor", "mcp.json"))}
	case VSCode:
		var u string
		switch e.OS {
		case "darwin":
			u = e.join(e.Home, "Library", "Application Support", "Code", "User", "mcp.json")
		case "windows":
			u = e.join(e.appData(), "Code", "User", "mcp.json")
		default:
			u = e.join(e.xdgConfig(), "Code", "User", "mcp.json")
		}
		return []Location{user(u), project(e.join(e.Cwd, ".vscode", "mcp.json"))}
	case Windsurf:
		return []Location{user(e.join(e.Home, ".codeium", "windsurf", "mcp_config.json"))}
	case Codex:
		home := e.CodexHome
		if home == "" {
			home = e.join(e.Home, ".codex")
		}
		return []Location{user(e.join(home, "config.toml")), project(e.join(e.Cwd, ".codex", "config.toml"))}
	case Gemini:
		var sys string
		switch e.OS {
		case "darwin":
			sys = "/Library/Application Support/GeminiCli/settings.json"
		case "windows":
			sys = `C:\ProgramData\gemini-cli\settings.json`
		default:
			sys = "/etc/gemini-cli/settings.json"
		}
		return []Location{user(e.join(e.Home, ".gemini", "settings.json")), project(e.join(e.Cwd, ".gemini", "settings.json")),
			{Client: c, Scope: ScopeSystem, Path: sys}}
	case Zed:
		u := e.join(e.xdgConfig(), "zed", "settings.json")
		if e.OS == "windows" {
			u = e.join(e.appData(), "Zed", "settings.json")
		}
		return []Location{user(u), project(e.join(e.Cwd, ".zed", "settings.json"))}
	}
	return nil
}

// Guess returns the client whose file path is, from its name and folder
// ("…/.cursor/mcp.json" is Cursor's), or "" when it cannot tell.
func Guess(path string) Client {
	p := filepath.ToSlash(path)
	base, dir := filepath.Base(p), filepath.Base(filepath.Dir(p))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop
	case base == ".claude.json" || base == ".mcp.json":
		return ClaudeCode
	case base == "mcp.json" && dir == ".cursor":
		return Cursor
	case base == "mcp.json" && (dir == ".vscode" || dir == "User"):
		return VSCode
	case base == "mcp_config.json":
		return Windsurf
	case strings.HasSuffix(base, ".toml"):
		return Codex
	case base == "settings.json" && slices.Contains([]string{".gemini", "gemini-cli", "GeminiCli"}, dir):
		return Gemini
	case base == "settings.json" && (dir == "zed" || dir == "Zed" || dir == ".zed"):
		return Zed
	}
	return ""
}
