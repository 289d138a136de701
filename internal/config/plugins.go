package config

import (
	"path/filepath"
	"strings"
	"time"
)

// Plugin is one local-tool plugin, [plugins.NAME]: a program built with
// plugins/sdk that the proxy starts and reaches like a server.
//
// A plugin takes the same policy keys as a server (read_only, annotations,
// tools.allow/deny, overrides); see policy.go.
type Plugin struct {
	// Name is the key in [plugins.NAME]; plugins and servers share one
	// namespace.
	Name string

	// Command is the plugin's executable: an absolute path (path in the
	// file, or a command with a separator, resolved against Config.Dir), or
	// a bare command name looked up in PATH when the plugin starts.
	Command string
	Args    []string
	// Env is the plugin's whole environment besides the plugin handshake:
	// the proxy's environment is not inherited, so PATH or HOME reach the
	// plugin only when listed (PATH = "${PATH}").
	Env map[string]string
	// SHA256 is the expected SHA-256 of the executable in lower-case hex,
	// checked before every start; empty when the file is not checked.
	SHA256 string

	// Prefix namespaces the plugin's tools; it is Name when absent in the
	// file, and "" exposes names unchanged.
	Prefix string

	StartupTimeout time.Duration
	CallTimeout    time.Duration
	Required       bool
}

// pluginEntry is a decoded, enabled plugin, with where to report problems.
type pluginEntry struct {
	Plugin
	at       func(format string, args ...any) // the plugin's table
	prefixAt func(format string, args ...any)
}

// plugins decodes the [plugins.NAME] tables in document order and checks
// that their names and prefixes collide neither with each other nor with the
// servers'.
func (d *decoder) plugins(root *table, cfg *Config) []Plugin {
	pt, ok := root.tableOf("plugins", "a table of plugins such as [plugins.NAME]")
	if !ok {
		return nil
	}
	names := d.inDocumentOrder(pt)

	var list []pluginEntry
	for _, name := range names {
		t, ok := pt.tableOf(name, `a table with path = "..."`)
		if !ok {
			continue
		}
		if p, ok := d.plugin(t, name, cfg); ok {
			list = append(list, p)
		}
	}

	out := make([]Plugin, 0, len(list))
	for i, p := range list {
		prefixFits(p.Prefix, cfg.MaxNameLength, p.prefixAt)
		d.pluginCollision(p, cfg.Servers, list[:i])
		out = append(out, p.Plugin)
	}
	return out
}

// pluginCollision reports, once, the first server or earlier plugin that p
// collides with by name or prefix.
func (d *decoder) pluginCollision(p pluginEntry, servers []Server, prev []pluginEntry) {
	for _, s := range servers {
		if s.Name == p.Name {
			p.at("plugin %q has the name of a server; plugins and servers share names: rename one of them", p.Name)
			return
		}
	}
	type other struct{ kind, name, prefix string }
	var others []other
	for _, s := range servers {
		others = append(others, other{"server", s.Name, s.Prefix})
	}
	for _, q := range prev {
		others = append(others, other{"plugin", q.Name, q.Prefix})
	}
	for _, o := range others {
		if p.Prefix == "" || o.prefix == "" {
			continue
		}
		if p.Prefix == o.prefix {
			p.prefixAt("%s %q and plugin %q both use prefix %q; give one of them another prefix", o.kind, o.name, p.Name, p.Prefix)
			return
		}
		if outer, _, ok := nestedPrefixes(o.prefix, p.Prefix); ok {
			p.prefixAt("%s %q (prefix %q) and plugin %q (prefix %q): one prefix lies in the namespace of the other (%s__*), so their names could collide; change one of the prefixes",
				o.kind, o.name, o.prefix, p.Name, p.Prefix, outer)
			return
		}
		if URIPrefix(p.Prefix) == URIPrefix(o.prefix) {
			p.prefixAt("%s %q (prefix %q) and plugin %q (prefix %q) both get resource URI prefix %q; change one of the prefixes",
				o.kind, o.name, o.prefix, p.Name, p.Prefix, URIPrefix(p.Prefix))
			return
		}
	}
}

// plugin decodes one [plugins.NAME] table. A disabled plugin is checked for
// unknown keys and wrong types only.
func (d *decoder) plugin(t *table, name string, cfg *Config) (pluginEntry, bool) {
	disabled, _ := t.boolean("disabled")
	t.expand = !disabled

	p := Plugin{Name: name}
	path, pathOK := t.strOr("path", "put the executable in path and its arguments in args = [...]")
	command, cmdOK := t.strOr("command", "put the program in command and its arguments in args = [...]")
	p.Args, _ = t.strs("args")
	p.Env, _ = t.strMap("env")
	sum, sumOK := t.str("sha256")
	prefix, prefixOK := t.str("prefix")
	p.StartupTimeout = t.duration("startup_timeout", cfg.StartupTimeout)
	p.CallTimeout = t.duration("call_timeout", cfg.CallTimeout)
	p.Required, _ = t.boolean("required")
	d.serverPolicy(t, name, disabled)
	unknown := t.finish()
	if disabled {
		return pluginEntry{}, false
	}

	if !validServerName(name) {
		t.errorHere("plugin name %q is not valid; use 1 to 32 letters, digits, '_' or '-', starting with a letter or digit", name)
	}

	hasPath, hasCmd := t.has("path"), t.has("command")
	switch {
	case hasPath && hasCmd:
		t.errorHere(`both path and command are set; keep path for the plugin's file, or command for a program looked up in PATH`)
	case !hasPath && !hasCmd && !unknown:
		t.errorHere(`neither path nor command is set; set path = "bin/%s" to the plugin's executable`, name)
	case hasPath && pathOK:
		if path == "" {
			t.errorf("path", `path is empty; set it to the plugin's executable, like "bin/%s"`, name)
		} else {
			p.Command = resolve(cfg.Dir, path)
			t.checkCommand("path", p.Command)
		}
	case hasCmd && cmdOK:
		switch {
		case command == "":
			t.errorf("command", `command is empty; set it to a program name, or use path = "bin/%s" for a file`, name)
		case strings.ContainsRune(command, '/') || strings.ContainsRune(command, filepath.Separator):
			p.Command = resolve(cfg.Dir, command)
		default:
			p.Command = command
		}
		if p.Command != "" {
			t.checkCommand("command", p.Command)
		}
	}

	if sumOK {
		if validSHA256(sum) {
			p.SHA256 = strings.ToLower(sum)
		} else {
			t.errorf("sha256", `%q is not a SHA-256; write the 64 hex digits that "sha256sum FILE" prints`, sum)
		}
	}

	e := pluginEntry{Plugin: p, at: t.errorHere}
	e.Prefix, e.prefixAt = t.prefix(name, prefix, prefixOK)
	return e, true
}
