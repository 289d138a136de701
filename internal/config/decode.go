package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/envref"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/tomldepth"
	"github.com/manifold-mcp/manifold/policy"
)

// decoder walks the document one table at a time. Every table is decoded into
// a map[string]toml.Primitive, so keys match exactly (the library matches
// struct fields case-insensitively) and every value keeps its key context,
// from which its position is recovered.
type decoder struct {
	file   string                      // the path as given, prefixing every message
	src    string                      // the document, without a byte order mark
	lines  []int                       // byte offset of the start of each line
	md     toml.MetaData               // the parse, to decode primitives
	lookup func(string) (string, bool) // environment
	// lookPath finds a command's executable; nil: commands are not checked.
	lookPath func(string) (string, error)
	probs    []*problem // in the order found

	serverRules map[string]*policy.ServerRules // enabled servers' policy keys, by name (policy.go)
	renames     map[string]string              // override names taken, to where (policy.go)
	renameSites []renameSite                   // enabled servers' override names, checked against the prefixes (policy.go)

	secrets     []string          // every secret found so far (Config.Secrets)
	expanded    map[string]string // value of a ${VAR} expansion → "${VAR}", for messages
	dir         string            // the file's folder: the base of relative ${file:} paths
	secretFiles []SecretFile      // files read by ${file:}, once each (Config.SecretFiles)

	clusterTable *table // [cluster], if present, for clusterKey

	leftOut []leftOut // servers left out for unset variables (Config.LeftOut)
}

// leftOut is a server left out, and the unset variables that did it.
type leftOut struct {
	name  string
	probs []*problem
}

// decode parses data, the file at abs shown as file. lookPath, if not nil,
// checks that every command can be run ([Check]).
func decode(file, abs string, data []byte, lookup func(string) (string, bool), lookPath func(string) (string, error)) (*Config, error) {
	d, top, err := newDecoder(file, data)
	if err != nil {
		return nil, err
	}
	d.lookup, d.lookPath, d.dir = lookup, lookPath, baseDir(abs)

	cfg := &Config{Path: abs, Dir: d.dir}
	root := &table{d: d, fields: top, expand: true}
	d.global(root, cfg)
	d.pinKeys(root, cfg)
	cfg.HTTP = d.http(root)
	cfg.Auth = d.auth(root, cfg)
	cfg.Telemetry = d.telemetry(root)
	cfg.Cluster = d.cluster(root)
	cfg.Tokens = d.tokens(root, cfg)
	cfg.Protocol = d.protocol(root, cfg)
	d.clusterKey(cfg)
	cfg.Catalog = d.catalog(root)
	cfg.Servers = d.servers(root, cfg)
	cfg.Plugins = d.plugins(root, cfg) // after the servers: it checks names and prefixes against theirs
	d.policyKeys(root, cfg)
	root.hint = foreignTopKey
	root.finish()
	d.valueSecrets(cfg)

	if len(d.probs) > 0 {
		slices.SortStableFunc(d.probs, func(a, b *problem) int { return a.off - b.off })
		d.redactProblems()
		errs := make([]error, len(d.probs))
		for i, p := range d.probs {
			errs[i] = p
		}
		return nil, errors.Join(errs...)
	}
	cfg.Secrets = slices.Compact(slices.Sorted(slices.Values(d.secrets)))
	cfg.SecretFiles = d.secretFiles
	if len(d.leftOut) > 0 {
		d.redactProblems()
	}
	for _, l := range d.leftOut {
		msgs := make([]string, len(l.probs))
		for i, p := range l.probs {
			msgs[i] = p.Error()
		}
		cfg.LeftOut = append(cfg.LeftOut, LeftOut{Name: l.name, Err: strings.Join(msgs, "; ")})
	}
	return cfg, nil
}

// lineStarts returns the byte offset of the start of each line of src.
// newDecoder parses data as the TOML document file, returning a decoder for
// it and its top-level table: the one prelude of every TOML file manifold
// reads (proxy.toml, policy files, the API keys file). The parser drops a
// UTF-8 byte order mark and counts offsets after it, so src does too; a
// document nested too deep is refused before the parser sees it (depth);
// a syntax error is a problem with file:line (syntaxError).
func newDecoder(file string, data []byte) (*decoder, map[string]toml.Primitive, error) {
	src := strings.TrimPrefix(string(data), "\uFEFF")
	d := &decoder{file: file, src: src, lines: lineStarts(src)}
	if err := d.depth(); err != nil {
		return nil, nil, err
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(src, &top)
	if err != nil {
		return nil, nil, d.syntaxError(err)
	}
	d.md = md
	return d, top, nil
}

func lineStarts(src string) []int {
	lines := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			lines = append(lines, i+1)
		}
	}
	return lines
}

// depth refuses a document nested so deep that the TOML decoder would take
// minutes on it (tomldepth.Check), before the decoder sees it.
func (d *decoder) depth() error {
	var de *tomldepth.Error
	if err := tomldepth.Check(d.src); errors.As(err, &de) {
		return &problem{file: d.file, line: de.Line, col: 1, off: -1,
			msg: fmt.Sprintf("arrays or inline tables nested more than %d deep; the file is not read. Write nested settings as [tables] instead", de.Max)}
	}
	return nil
}

// syntaxError turns an error of the TOML parser into a problem.
func (d *decoder) syntaxError(err error) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &problem{file: d.file, off: -1, msg: "invalid TOML: " + redact.Shapes(err.Error())}
	}
	p := &problem{file: d.file, line: pe.Position.Line, off: pe.Position.Start, msg: "invalid TOML: " + pe.Message}
	// The parser's column is off when the error is at the start of a line;
	// recompute it from the byte offset.
	if l := p.line; l >= 1 && l <= len(d.lines) {
		start, end := d.lineBounds(l)
		if pe.Position.Start >= start && pe.Position.Start <= end {
			p.col = pe.Position.Start - start + 1
		} else {
			p.col = pe.Position.Col
		}
	}
	p.msg = redact.Shapes(strings.ReplaceAll(p.msg, "\n", `\n`))
	return p
}

// lineBounds returns the byte offsets of the start and end (before the
// newline) of line l, 1-based.
func (d *decoder) lineBounds(l int) (start, end int) {
	start, end = d.lines[l-1], len(d.src)
	if l < len(d.lines) {
		end = d.lines[l] - 1
	}
	return start, end
}

// global decodes the top-level settings.
func (d *decoder) global(root *table, cfg *Config) {
	if v, ok := root.integer("version"); ok && v != 1 {
		root.errorf("version", "version %d is not supported; this manifold reads version 1: set version = 1 or remove the key", v)
	}
	cfg.StartupTimeout = root.duration("startup_timeout", DefaultStartupTimeout)
	cfg.CallTimeout = root.duration("call_timeout", DefaultCallTimeout)
	cfg.FirstListWait = root.duration("first_list_wait", DefaultFirstListWait)
	cfg.FirstListTimeout = root.duration("first_list_timeout", DefaultFirstListTimeout)
	cfg.MaxMessageBytes = root.size("max_message_bytes", DefaultMaxMessageBytes)
	cfg.MaxNameLength = DefaultMaxNameLength
	if n, ok := root.integer("max_name_length"); ok {
		if n < MinMaxNameLength || n > MaxMaxNameLength {
			root.errorf("max_name_length", `%d is out of range; use %d to %d: 64 - len("mcp__<entry>__") for Claude Code, which is 49 for the entry "manifold"`, n, MinMaxNameLength, MaxMaxNameLength)
		} else {
			cfg.MaxNameLength = int(n)
		}
	}
	cfg.LogLevel = DefaultLogLevel
	if s, ok := root.str("log_level"); ok {
		switch s {
		case "debug", "info", "warn", "error":
			cfg.LogLevel = s
		default:
			root.errorf("log_level", `%q is not a log level; use "debug", "info", "warn" or "error"`, s)
		}
	}
}

// http decodes the [http] table.
func (d *decoder) http(root *table) HTTP {
	h := HTTP{
		Listen:             DefaultListen,
		MaxBodyBytes:       DefaultHTTPMaxBodyBytes,
		HeaderTimeout:      DefaultHTTPHeaderTimeout,
		BodyTimeout:        DefaultHTTPBodyTimeout,
		MaxSessions:        DefaultHTTPMaxSessions,
		SessionIdleTimeout: DefaultHTTPSessionIdleTimeout,
		DrainGrace:         DefaultHTTPDrainGrace,
		MaxEventBytes:      DefaultHTTPMaxEventBytes,
	}
	t, ok := root.table("http")
	if !ok {
		return h
	}
	if s, ok := t.str("listen"); ok {
		_, port, err := net.SplitHostPort(s)
		if err == nil {
			_, err = strconv.ParseUint(port, 10, 16)
		}
		if err != nil {
			t.errorf("listen", `%q is not a host:port address; write it like "127.0.0.1:7777"`, s)
		} else {
			h.Listen = s
		}
	}
	if hosts, ok := t.strs("allowed_hosts"); ok {
		for _, s := range hosts {
			if s == "" || strings.ContainsAny(s, "/ ") {
				t.errorf("allowed_hosts", `%q is not a host name; write the Host header value, like "proxy.example.com" or "proxy.example.com:7777"`, s)
			}
		}
		h.AllowedHosts = hosts
	}
	if origins, ok := t.strs("allowed_origins"); ok {
		for _, s := range origins {
			u, err := url.Parse(s)
			if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
				t.errorf("allowed_origins", `%q is not an origin; write scheme://host[:port], like "https://app.example.com"`, s)
				continue
			}
			if u.Path == "/" {
				t.errorf("allowed_origins", `%q has a trailing "/" that an Origin header never has; remove it`, s)
			}
		}
		h.AllowedOrigins = origins
	}
	if n, ok := t.integer("max_body_bytes"); ok {
		if n < MinHTTPMaxBodyBytes {
			t.errorf("max_body_bytes", "%d is out of range; use a number of bytes of at least %d (4 KiB), like %d (4 MiB)", n, MinHTTPMaxBodyBytes, DefaultHTTPMaxBodyBytes)
		} else {
			h.MaxBodyBytes = n
		}
	}
	h.HeaderTimeout = t.duration("header_timeout", DefaultHTTPHeaderTimeout)
	h.BodyTimeout = t.duration("body_timeout", DefaultHTTPBodyTimeout)
	if n, ok := t.integer("max_sessions"); ok {
		if n < 1 || n > 1<<20 {
			t.errorf("max_sessions", "%d is out of range; use a number of sessions between 1 and %d, like %d", n, 1<<20, DefaultHTTPMaxSessions)
		} else {
			h.MaxSessions = int(n)
		}
	}
	h.SessionIdleTimeout = t.duration("session_idle_timeout", DefaultHTTPSessionIdleTimeout)
	h.DrainGrace = t.duration("drain_grace", DefaultHTTPDrainGrace)
	if n, ok := t.integer("max_event_bytes"); ok {
		if n < MinHTTPMaxEventBytes || n > MaxHTTPMaxEventBytes {
			t.errorf("max_event_bytes", "%d is out of range; use a number of bytes between %d (64 KiB) and %d (1 GiB), like %d (10 MiB)", n, MinHTTPMaxEventBytes, MaxHTTPMaxEventBytes, DefaultHTTPMaxEventBytes)
		} else {
			h.MaxEventBytes = n
		}
	}
	t.finish()
	return h
}

// entry is a decoded, enabled server, with where to report a problem with
// its prefix.
type entry struct {
	Server
	prefixAt func(format string, args ...any)
	unset    []*problem // its env, headers or args name variables that are not set
}

// inDocumentOrder returns the keys of t in the order they appear in the file.
func (d *decoder) inDocumentOrder(t *table) []string {
	offs := make(map[string]int, len(t.fields))
	for name, p := range t.fields {
		_, offs[name] = d.where(p)
	}
	return slices.SortedFunc(maps.Keys(t.fields), func(a, b string) int {
		if c := offs[a] - offs[b]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}

// servers decodes the [servers.NAME] tables in document order and checks
// that their prefixes do not collide.
func (d *decoder) servers(root *table, cfg *Config) []Server {
	st, ok := root.tableOf("servers", "a table of servers such as [servers.NAME]")
	if !ok {
		return nil
	}
	names := d.inDocumentOrder(st)

	var list []entry
	for _, name := range names {
		t, ok := st.tableOf(name, `a table with command = "..." or url = "..."`)
		if !ok {
			continue
		}
		s, ok := d.server(t, name, cfg)
		switch {
		case !ok:
		case len(s.unset) > 0:
			d.leftOut = append(d.leftOut, leftOut{name: name, probs: s.unset})
		default:
			list = append(list, s)
		}
	}

	out := make([]Server, 0, len(list))
	for i, s := range list {
		prefixFits(s.Prefix, cfg.MaxNameLength, s.prefixAt)
		// Report a collision once, with the first server it collides with.
		for _, prev := range list[:i] {
			if s.Prefix == "" || prev.Prefix == "" {
				continue
			}
			if s.Prefix == prev.Prefix {
				s.prefixAt("servers %q and %q both use prefix %q; give one of them another prefix", prev.Name, s.Name, s.Prefix)
				break
			}
			if outer, _, ok := nestedPrefixes(prev.Prefix, s.Prefix); ok {
				s.prefixAt("servers %q (prefix %q) and %q (prefix %q): one prefix lies in the namespace of the other (%s__*), so their names could collide; change one of the prefixes",
					prev.Name, prev.Prefix, s.Name, s.Prefix, outer)
				break
			}
			if URIPrefix(s.Prefix) == URIPrefix(prev.Prefix) {
				s.prefixAt("servers %q (prefix %q) and %q (prefix %q) both get resource URI prefix %q; change one of the prefixes",
					prev.Name, prev.Prefix, s.Name, s.Prefix, URIPrefix(s.Prefix))
				break
			}
		}
		out = append(out, s.Server)
	}
	return out
}

// MinNameRoom is the room that max_name_length must leave after a prefix
// and "__": one character of the name, "-" and the 8 hex digits of the hash
// of a shortened name. With less, a shortened name would lose its
// "<prefix>__" and fall out of the server's namespace, which only that
// server may fill.
const MinNameRoom = 1 + 1 + 8

// prefixFits reports a prefix that max_name_length would cut from a
// shortened name.
func prefixFits(prefix string, max int, at func(format string, args ...any)) {
	if prefix == "" || len(prefix)+len("__")+MinNameRoom <= max {
		return
	}
	at("prefix %q (%d characters) does not fit in max_name_length = %d with \"__\" and room for a shortened name (%d characters): its names would lose the prefix and leave its namespace; use a prefix of at most %d characters, or max_name_length = %d or more",
		prefix, len(prefix), max, MinNameRoom, max-len("__")-MinNameRoom, len(prefix)+len("__")+MinNameRoom)
}

// server decodes one [servers.NAME] table. A disabled server is checked for
// unknown keys and wrong types only: its ${VAR}s are not expanded and it is
// not validated further.
func (d *decoder) server(t *table, name string, cfg *Config) (entry, bool) {
	disabled, _ := t.boolean("disabled")
	t.expand = !disabled

	s := Server{Name: name}
	var cmdOK, urlOK bool
	var unset []*problem // unset variables of args, env and headers
	s.Command, cmdOK = t.strOr("command", "put the program in command and its arguments in args = [...]")
	mark := len(d.probs)
	s.Args, _ = t.strs("args")
	s.Env, _ = t.strMap("env")
	unset = d.takeUnset(mark)
	cwd, cwdOK := t.str("cwd")
	s.URL, urlOK = t.str("url")
	mark = len(d.probs)
	s.Headers, _ = t.strMap("headers")
	unset = append(unset, d.takeUnset(mark)...)
	transport, transportOK := t.str("transport")
	prefix, prefixOK := t.str("prefix")
	s.StartupTimeout = t.duration("startup_timeout", cfg.StartupTimeout)
	s.CallTimeout = t.duration("call_timeout", cfg.CallTimeout)
	s.Required, _ = t.boolean("required")
	s.Description = t.description("description")
	s.Instructions, _ = t.boolean("instructions")
	s.MaxMessageBytes = t.size("max_message_bytes", cfg.MaxMessageBytes)
	d.serverPolicy(t, name, disabled)
	d.serverSupervision(t, &s)
	if start, ok := t.str("start"); ok {
		switch start {
		case "eager":
		case "lazy":
			s.Lazy = true
		default:
			t.errorf("start", `%q is not a start mode; write "eager" (start with the proxy, the default) or "lazy" (start on the first call)`, start)
		}
	}
	s.IdleTimeout = t.duration("idle_timeout", 0)
	if iso, ok := t.str("isolation"); ok {
		switch iso {
		case "shared":
		case "session":
			s.PerSession = true
		case "identity":
			s.PerIdentity = true
			if t.has("url") {
				t.errorf("isolation", `isolation = "identity" starts a process per identity, and this server is remote; for each caller's own credential write auth = "oauth" and credentials = "identity"`)
			}
		default:
			t.errorf("isolation", `%q is not an isolation mode; write "shared" (one process for all clients, the default), "session" (a process per HTTP client session) or "identity" (a process per authenticated caller)`, iso)
		}
	}
	if kinds, ok := t.strs("allow_unsolicited"); ok {
		for i, k := range kinds {
			switch k {
			case "sampling":
				s.AllowUnsolicitedSampling = true
			case "elicitation":
				s.AllowUnsolicitedElicitation = true
			default:
				t.errorf("allow_unsolicited", `element %d: %q is not a request kind; write "sampling" or "elicitation" (roots/list is always allowed)`, i+1, k)
			}
		}
	}
	if proto, ok := t.str("protocol"); ok {
		switch proto {
		case ProtocolAuto:
		case ProtocolModern, ProtocolLegacy:
			s.Protocol = proto
		case "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25":
			t.errorf("protocol", `%q is a version of the initialize era; write protocol = "legacy" (the version is negotiated at initialize)`, proto)
		case "modern", "2026", "stateless":
			t.errorf("protocol", `%q is not a protocol; write protocol = "2026-07-28" to pin the stateless era`, proto)
		default:
			t.errorf("protocol", `%q is not a protocol; write "auto" (probe server/discover, the default), "2026-07-28" or "legacy"`, proto)
		}
	}
	s.ProbeTimeout = t.duration("probe_timeout", 0)
	s.Pin = serverPin(t, cfg)
	d.serverOAuth(t, &s)
	d.serverIdentities(t, &s)
	t.hint = foreignServerKey
	unknown := t.finish()
	if disabled {
		return entry{}, false
	}

	if !validServerName(name) {
		t.errorHere("server name %q is not valid; use 1 to 32 letters, digits, '_' or '-', starting with a letter or digit", name)
	}

	hasCmd, hasURL := t.has("command"), t.has("url")
	switch {
	case hasCmd && hasURL:
		t.errorHere(`both command and url are set; keep command to start a local server, or url to reach a remote one`)
	case !hasCmd && !hasURL && !unknown:
		t.errorHere(`neither command nor url is set; set command = "..." to start a local server, or url = "https://..." to reach a remote one`)
	case hasCmd:
		for _, k := range []string{"headers", "transport"} {
			if t.has(k) {
				t.errorf(k, "%s is only for a remote server (one with url); remove it", k)
			}
		}
		switch {
		case !cmdOK:
		case s.Command == "":
			t.errorf("command", `command is empty; set it to a program name like "npx" or a path like "./bin/server"`)
		case strings.ContainsRune(s.Command, '/') || strings.ContainsRune(s.Command, filepath.Separator):
			s.Command = resolve(cfg.Dir, s.Command)
		}
		if cmdOK && s.Command != "" {
			t.checkCommand("command", s.Command)
		}
		s.Cwd = cfg.Dir
		if cwdOK {
			s.Cwd = resolve(cfg.Dir, cwd)
		}
	case hasURL:
		for _, k := range []string{"args", "env", "cwd"} {
			if t.has(k) {
				t.errorf(k, "%s is only for a local server (one with command); remove it", k)
			}
		}
		if urlOK {
			raw, _ := t.raw("url")
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.errorf("url", `%q is not an http:// or https:// URL with a host; write it like "https://example.com/mcp"`, raw)
			}
		}
		s.Transport = TransportStreamable
		if transportOK {
			switch transport {
			case TransportStreamable, TransportSSE:
				s.Transport = transport
			default:
				t.errorf("transport", `%q is not a transport; use "streamable" (the default) or "sse"`, transport)
			}
		}
		if s.Transport == TransportSSE && s.Protocol == ProtocolModern {
			t.errorf("protocol", `the sse transport belongs to the initialize era, so it cannot speak 2026-07-28; remove protocol, or use transport = "streamable"`)
		}
	}

	if s.Required {
		d.probs = append(d.probs, unset...) // its failure stops the start: a config error
		unset = nil
	}
	e := entry{Server: s, unset: unset}
	e.Prefix, e.prefixAt = t.prefix(name, prefix, prefixOK)
	return e, true
}

// takeUnset removes from the problems found since the first mark those
// that are unset variables, and returns them.
func (d *decoder) takeUnset(mark int) []*problem {
	var out []*problem
	kept := d.probs[:mark]
	for _, p := range d.probs[mark:] {
		if p.unset {
			out = append(out, p)
		} else {
			kept = append(kept, p)
		}
	}
	d.probs = kept
	return out
}

// prefix resolves the prefix of the server or plugin name from the value
// of its prefix key (ok: it is a string): the name when the key is absent,
// the value when valid (possibly ""). It also returns where to report a
// problem with it: the prefix key if present, else the table.
func (t *table) prefix(name, value string, ok bool) (string, func(format string, args ...any)) {
	if !t.has("prefix") {
		return name, t.errorHere
	}
	at := func(format string, args ...any) { t.errorf("prefix", format, args...) }
	switch {
	case !ok:
	case !validPrefix(value):
		t.errorf("prefix", `prefix %q is not valid; use at most 32 letters, digits, '_' or '-', or "" to expose names unchanged`, value)
	default:
		return value, at
	}
	return "", at
}

// checkCommand reports the command at key name when it cannot be run: a
// bare name not in PATH, or a path that is not an executable file. It does
// nothing unless the decoder checks commands.
func (t *table) checkCommand(name, command string) {
	if t.d.lookPath == nil {
		return
	}
	_, err := t.d.lookPath(command)
	switch {
	case err == nil:
	case !strings.ContainsRune(command, '/') && !strings.ContainsRune(command, filepath.Separator):
		t.errorf(name, "%q is not found in PATH (looked up as the shell does; a client may start manifold with a shorter PATH than yours); install it, or write its full path, like command = \"/usr/local/bin/%s\"", command, command)
	case errors.Is(err, fs.ErrNotExist):
		t.errorf(name, "%s does not exist; fix the path (a relative one is relative to this file's folder) or build the program", command)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, exec.ErrNotFound):
		t.errorf(name, "%s is not an executable file; make it one (chmod +x %s) or fix the path", command, command)
	default:
		t.errorf(name, "%s cannot be run: %v", command, err)
	}
}

// IsDescriptor reports whether the absolute path abs names a file
// descriptor (/dev/fd/N, /proc/PID/fd/N, /dev/stdin: a config given as
// --config <(…) or through standard input) rather than a file. Such a name
// says nothing of the config: the shell gives /dev/fd/63 to every pipe.
func IsDescriptor(abs string) bool {
	dir := filepath.Dir(abs)
	return dir == "/dev/fd" || abs == "/dev/stdin" || strings.HasPrefix(dir, "/proc/") && filepath.Base(dir) == "fd" && filepath.Dir(filepath.Dir(dir)) == "/proc"
}

// baseDir returns the folder that the relative paths of the config at abs
// resolve against: the file's own, except for a name of a file descriptor
// (IsDescriptor), whose "folder" is the process's table of descriptors (a
// server started there would run in /proc/PID/fd). Such a config is
// resolved against the working directory, as the command line that gave it
// is.
func baseDir(abs string) string {
	if IsDescriptor(abs) {
		if wd, err := os.Getwd(); err == nil {
			return wd
		}
	}
	return filepath.Dir(abs)
}

// resolve makes a relative path absolute against dir.
func resolve(dir, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(dir, path)
}

// where returns the line and byte offset of the key that holds p, or 0, -1
// when unknown. Tables that are only implied (by [a.b] or a.b = 1) have no
// position of their own; their first descendant's is used.
func (d *decoder) where(p toml.Primitive) (line, off int) {
	var pe toml.ParseError
	if err := d.md.PrimitiveDecode(p, &probe{}); errors.As(err, &pe) && pe.Position.Line > 0 {
		return pe.Position.Line, pe.Position.Start
	}
	line, off = 0, -1
	var m map[string]toml.Primitive
	if d.md.PrimitiveDecode(p, &m) != nil {
		return line, off
	}
	for _, c := range m {
		if l, o := d.where(c); l > 0 && (off < 0 || o < off) {
			line, off = l, o
		}
	}
	return line, off
}

// probe makes the decoder report the position of a value: decoding any value
// into it fails with a toml.ParseError positioned at the value's key.
type probe struct{}

func (*probe) UnmarshalTOML(any) error { return errProbe }

var errProbe = errors.New("position probe")

// column returns the 1-based column of the key segment seg on line, found
// near offset off, or 0 when it is not on that line.
func (d *decoder) column(line, off int, seg string) int {
	if line < 1 || line > len(d.lines) {
		return 0
	}
	start, end := d.lineBounds(line)
	text := d.src[start:end]
	tok := toml.Key{seg}.String()
	at := func(i int) bool {
		j := i + len(tok)
		return (i == 0 || !isBare(text[i-1])) && (j == len(text) || !isBare(text[j]))
	}
	rel := min(max(off-start, 0), len(text))
	// A value follows its key: look back from the value first.
	for i := strings.LastIndex(text[:rel], tok); i >= 0; i = strings.LastIndex(text[:i], tok) {
		if at(i) {
			return i + 1
		}
	}
	// A table header or an inline-table entry is positioned at or before the key.
	for i := rel; i < len(text); i++ {
		j := strings.Index(text[i:], tok)
		if j < 0 {
			break
		}
		if at(i + j) {
			return i + j + 1
		}
		i += j
	}
	return 0
}

func isBare(c byte) bool {
	return c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// report records a problem with the value p at key.
func (d *decoder) report(key toml.Key, p *toml.Primitive, msg string) {
	pr := &problem{file: d.file, off: -1, key: key.String(), msg: msg}
	if p != nil {
		pr.line, pr.off = d.where(*p)
		if pr.line > 0 && len(key) > 0 {
			pr.col = d.column(pr.line, pr.off, key[len(key)-1])
		}
	}
	d.probs = append(d.probs, pr)
}

// expandAt expands s, the value at key, reporting malformed ${...} and
// unset variables.
func (d *decoder) expandAt(key toml.Key, p toml.Primitive, s string) (string, bool) {
	r := envref.Resolver{Env: d.recordingLookup, File: func(path string) (string, error) { return d.readSecret(key, path) }}
	out, missing, err := r.Expand(s)
	if err != nil {
		d.report(key, &p, err.Error())
		return "", false
	}
	for _, name := range missing {
		d.report(key, &p, fmt.Sprintf("environment variable %s is not set; set it, or write ${%s:-default} to fall back to a default", name, name))
		d.probs[len(d.probs)-1].unset = true
	}
	return out, len(missing) == 0
}

// A table is one TOML table being decoded. Its accessors record the keys
// they are asked for; finish reports the others as unknown. Accessors report
// wrong types and return false for keys absent or invalid.
type table struct {
	d      *decoder
	key    toml.Key                  // path of this table; nil for the root
	self   *toml.Primitive           // the table's own value; nil for the root
	fields map[string]toml.Primitive // its keys, exactly as written
	valid  []string                  // keys asked for so far
	expand bool                      // whether string values expand ${VAR}
	// hint, if set, says what to write instead of an unknown key that
	// belongs to another client's format, given its value ("" if none).
	hint func(name string, v any) string
}

// path returns the key path of the field name.
func (t *table) path(name string) toml.Key {
	return append(t.key[:len(t.key):len(t.key)], name)
}

func (t *table) errorf(name string, format string, args ...any) {
	var p *toml.Primitive
	if v, ok := t.fields[name]; ok {
		p = &v
	}
	t.d.report(t.path(name), p, fmt.Sprintf(format, args...))
}

// errorHere reports a problem with the table as a whole.
func (t *table) errorHere(format string, args ...any) {
	t.d.report(t.key, t.self, fmt.Sprintf(format, args...))
}

// has reports whether the key name is present, whatever its value.
func (t *table) has(name string) bool {
	_, ok := t.fields[name]
	return ok
}

// raw returns the value of name as written in the file, before expansion, if
// it is a string.
func (t *table) raw(name string) (string, bool) {
	v, ok := t.value(name)
	s, isStr := v.(string)
	return s, ok && isStr
}

// value returns the decoded value of name and marks name as a valid key.
func (t *table) value(name string) (any, bool) {
	if !slices.Contains(t.valid, name) {
		t.valid = append(t.valid, name)
	}
	p, ok := t.fields[name]
	if !ok {
		return nil, false
	}
	var v any
	if err := t.d.md.PrimitiveDecode(p, &v); err != nil {
		t.errorf(name, "cannot decode: %v", err)
		return nil, false
	}
	return v, true
}

// unquote says to remove the quotes when v is a string.
func unquote(v any) string {
	if _, ok := v.(string); ok {
		return "remove the quotes"
	}
	return ""
}

// mismatch reports that name holds v where want was expected, and what to
// do (fix may be empty).
func (t *table) mismatch(name string, v any, want, fix string) {
	msg := fmt.Sprintf("expected %s, found %s", want, typeName(v))
	if fix != "" {
		msg += "; " + fix
	}
	t.errorf(name, "%s", msg)
}

func (t *table) str(name string) (string, bool) {
	return t.strOr(name, "")
}

// strOr is str with what to do when the value is an array instead.
func (t *table) strOr(name, arrayFix string) (string, bool) {
	v, ok := t.value(name)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		fix := "put the value in quotes"
		switch v.(type) {
		case []any:
			fix = arrayFix
		case map[string]any, []map[string]any:
			fix = ""
		}
		t.mismatch(name, v, "a string", fix)
		return "", false
	}
	if !t.expand {
		return s, true
	}
	return t.d.expandAt(t.path(name), t.fields[name], s)
}

func (t *table) strs(name string) ([]string, bool) {
	v, ok := t.value(name)
	if !ok {
		return nil, false
	}
	arr, ok := v.([]any)
	if !ok {
		t.mismatch(name, v, `an array of strings such as ["a", "b"]`, "")
		return nil, false
	}
	out := make([]string, len(arr))
	good := true
	for i, e := range arr {
		s, isStr := e.(string)
		switch {
		case !isStr:
			t.errorf(name, "element %d: expected a string, found %s; put every element in quotes", i+1, typeName(e))
			good = false
		case t.expand:
			var ok bool
			if out[i], ok = t.d.expandAt(t.path(name), t.fields[name], s); !ok {
				good = false
			}
		default:
			out[i] = s
		}
	}
	return out, good
}

// strMap decodes a table of strings, such as env or headers.
func (t *table) strMap(name string) (map[string]string, bool) {
	sub, ok := t.tableOf(name, `a table of strings such as { KEY = "value" }`)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(sub.fields))
	good := true
	for _, k := range slices.Sorted(maps.Keys(sub.fields)) {
		if s, ok := sub.str(k); ok {
			out[k] = s
		} else {
			good = false
		}
	}
	return out, good
}

func (t *table) table(name string) (*table, bool) {
	return t.tableOf(name, "a table")
}

func (t *table) tableOf(name, want string) (*table, bool) {
	v, ok := t.value(name)
	if !ok {
		return nil, false
	}
	if _, ok := v.(map[string]any); !ok {
		t.mismatch(name, v, want, "")
		return nil, false
	}
	p := t.fields[name]
	sub := &table{d: t.d, key: t.path(name), self: &p, expand: t.expand}
	if err := t.d.md.PrimitiveDecode(p, &sub.fields); err != nil {
		t.errorf(name, "cannot decode: %v", err)
		return nil, false
	}
	return sub, true
}

func (t *table) boolean(name string) (bool, bool) {
	v, ok := t.value(name)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		t.mismatch(name, v, "true or false", unquote(v))
	}
	return b, ok
}

func (t *table) integer(name string) (int64, bool) {
	v, ok := t.value(name)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	if !ok {
		t.mismatch(name, v, "an integer", unquote(v))
	}
	return n, ok
}

// duration decodes a Go duration string greater than zero, returning def
// when the key is absent or invalid.
func (t *table) duration(name string, def time.Duration) time.Duration {
	v, ok := t.value(name)
	if !ok {
		return def
	}
	if n, ok := v.(int64); ok {
		t.errorf(name, `expected a duration string, found integer; write it with a unit, like "%ds"`, n)
		return def
	}
	s, ok := t.str(name)
	if !ok {
		return def
	}
	dur, err := time.ParseDuration(s)
	switch {
	case err != nil:
		t.errorf(name, `%q is not a duration; write it like "30s", "750ms" or "2m"`, s)
	case dur <= 0:
		t.errorf(name, `%q is not greater than zero; write a positive duration like "30s"`, s)
	default:
		return dur
	}
	return def
}

// size decodes a byte count of at least MinMaxMessageBytes, returning def
// when the key is absent or invalid.
func (t *table) size(name string, def int) int {
	n, ok := t.integer(name)
	if !ok {
		return def
	}
	if n < MinMaxMessageBytes || int64(int(n)) != n {
		t.errorf(name, "%d is out of range; use a number of bytes of at least %d (1 MiB), like %d (64 MiB)", n, MinMaxMessageBytes, DefaultMaxMessageBytes)
		return def
	}
	return int(n)
}

// description reads a server's description: a string of at most
// MaxDescriptionLength characters, its surrounding space trimmed.
func (t *table) description(name string) string {
	s, ok := t.str(name)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > MaxDescriptionLength {
		t.errorf(name, "%d characters is too long; say in at most %d characters what the server is for (it becomes one line of Manifold's instructions, which clients cut at 2 KB)", n, MaxDescriptionLength)
		return ""
	}
	return s
}

// finish reports every key of the table that no accessor asked for, and
// reports whether there was any.
func (t *table) finish() bool {
	found := false
	for _, name := range slices.Sorted(maps.Keys(t.fields)) {
		if slices.Contains(t.valid, name) {
			continue
		}
		found = true
		msg := unknownKeyMsg(name, t.valid)
		if t.hint != nil {
			var v any
			_ = t.d.md.PrimitiveDecode(t.fields[name], &v)
			if h := t.hint(name, v); h != "" {
				msg = "unknown key; " + h
			}
		}
		if len(t.key) == 0 {
			var v any
			if t.d.md.PrimitiveDecode(t.fields[name], &v) == nil {
				if m, ok := v.(map[string]any); ok && (m["command"] != nil || m["url"] != nil) {
					msg = fmt.Sprintf("unknown key; to define a server, write [servers.%s]", toml.Key{name})
				}
			}
		}
		t.errorf(name, "%s", msg)
	}
	return found
}
