package clientconf

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/tomldepth"
)

// MaxFileBytes bounds a client file that is read. ~/.claude.json keeps
// history and grows to a few MiB; nothing legitimate comes near this.
const MaxFileBytes = 64 << 20

// Entry is one server of a client file, in proxy.toml's terms. Its strings
// are proxy.toml values: ${VAR} references a variable and "$$" is a literal
// "$".
type Entry struct {
	// Name is the [servers.NAME] key: the client's name made valid (1 to 32
	// letters, digits, '_' or '-') and unique.
	Name string
	// Original is the name in the client file.
	Original string
	// Sources are the files that hold it (more than one after merging
	// duplicates), in the order read.
	Sources []Source

	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	URL string
	// Transport is config.TransportSSE for an SSE server; "" otherwise.
	Transport string
	Headers   map[string]string

	// Allow and Deny are tools.allow and tools.deny: globs of the server's
	// tool names.
	Allow, Deny []string

	// StartupTimeout and CallTimeout are durations; zero when the client
	// sets none.
	StartupTimeout, CallTimeout time.Duration
	Required                    bool
	// Disabled is a server the client has switched off, or one that uses a
	// variable only the client can resolve (see Notes).
	Disabled bool

	// Notes say what could not be mapped and why, and which variables to
	// set. They never hold a secret.
	Notes []string
	// SetVars are the variables that stand for inline secrets of the client
	// file: they must be set where manifold runs.
	SetVars []string
	// Vars are the variables the client's values referenced, which
	// manifold needs set too.
	Vars []string
}

// Source is where an entry was found.
type Source struct {
	Client Client
	Scope  Scope
	Path   string
	// Project is the project folder of a Claude Code local-scope entry.
	Project string
}

func (s Source) String() string {
	where := s.Path
	if s.Project != "" {
		where += ", project " + s.Project
	}
	return fmt.Sprintf("%s (%s scope, %s)", s.Client.Title(), s.Scope, where)
}

// isRemote reports whether e reaches a server by URL.
func (e *Entry) isRemote() bool { return e.URL != "" }

// key identifies the server behind the entry: the same command and args,
// or the same URL, is the same server.
func (e *Entry) key() string {
	if e.isRemote() {
		return "url\x00" + e.URL
	}
	return "cmd\x00" + e.Command + "\x00" + strings.Join(e.Args, "\x00")
}

func (e *Entry) notef(format string, args ...any) {
	e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
}

// Importer collects the entries of several client files, merging
// duplicates. The zero value is not usable; use [NewImporter].
type Importer struct {
	env     Env
	entries []*Entry
	byKey   map[string]*Entry
	// vars are the variables standing for inline secrets, with a digest
	// of their value (two secrets with one name get two variables).
	vars map[string][32]byte
	// Notes are about files and entries left out (Manifold's own entry).
	Notes []string
	// self are the entries that run Manifold itself, left out of entries.
	self []Entry
	// secrets are the inline secrets moved out of the entries, as the
	// client files spell them.
	secrets []string
}

// Secrets returns the inline secrets found in the files read, for a
// redact.Redactor of whatever shows those files.
func (im *Importer) Secrets() []string { return slices.Clone(im.secrets) }

// Manifold returns the entries found that run Manifold itself (left out of
// [Importer.Entries]), in the order found.
func (im *Importer) Manifold() []Entry { return slices.Clone(im.self) }

// NewImporter returns an Importer that resolves ${userHome} and relative
// paths with e.
func NewImporter(e Env) *Importer {
	return &Importer{env: e, byKey: make(map[string]*Entry), vars: make(map[string][32]byte)}
}

// Entries returns the entries imported so far, in the order first found.
func (im *Importer) Entries() []Entry {
	out := make([]Entry, len(im.entries))
	for i, e := range im.entries {
		out[i] = *e
	}
	return out
}

// Add parses data, the contents of the file at loc, and adds its entries.
// A file that holds no servers adds nothing and is not an error.
func (im *Importer) Add(loc Location, data []byte) error {
	if len(data) > MaxFileBytes {
		return fmt.Errorf("%s: %d bytes is more than a client file holds (at most %d); not read", loc.Path, len(data), MaxFileBytes)
	}
	if loc.Client == Codex {
		return im.addCodex(loc, data)
	}
	root, err := parseJSONC(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", loc.Path, err)
	}
	if root.kind != kindObject {
		return fmt.Errorf("%s: the file holds %s; a %s file holds a JSON object", loc.Path, root.kind, loc.Client.Title())
	}
	src := Source{Client: loc.Client, Scope: loc.Scope, Path: loc.Path}
	ic := interpCtx{style: clientStyle(loc.Client), home: im.env.Home}
	if loc.Scope == ScopeProject {
		ic.workspace = projectDir(loc.Path)
	}
	switch loc.Client {
	case VSCode:
		ic.inputs = vscodeInputs(root.get("inputs"))
		servers := root.get("servers")
		if servers == nil {
			servers = root.get("mcpServers") // the portable Copilot format
		}
		im.addServers(src, servers, ic)
	case Zed:
		im.addServers(src, root.get("context_servers"), ic)
	case ClaudeCode:
		im.addServers(src, root.get("mcpServers"), ic)
		if projects := root.get("projects"); projects != nil && projects.kind == kindObject {
			for _, m := range projects.members {
				local := src
				local.Scope, local.Project = ScopeLocal, m.key
				lic := ic
				lic.workspace = m.key
				im.addServers(local, m.value.get("mcpServers"), lic)
			}
		}
	default:
		im.addServers(src, root.get("mcpServers"), ic)
	}
	return nil
}

// projectDir is the project folder of a project-scope file: the folder of
// .mcp.json, the parent of .vscode/mcp.json and the like.
func projectDir(path string) string {
	dir := filepath.Dir(path)
	if b := filepath.Base(dir); strings.HasPrefix(b, ".") && b != "." && b != ".." {
		return filepath.Dir(dir)
	}
	return dir
}

// vscodeInputs maps the ids of VS Code's inputs to variable names.
func vscodeInputs(inputs *node) map[string]string {
	out := make(map[string]string)
	if inputs == nil || inputs.kind != kindArray {
		return out
	}
	for _, in := range inputs.elems {
		if id := in.get("id"); id != nil && id.kind == kindString && id.str != "" {
			out[id.str] = varName(id.str)
		}
	}
	return out
}

func (im *Importer) addServers(src Source, servers *node, ic interpCtx) {
	if servers == nil {
		return
	}
	if servers.kind != kindObject {
		im.Notes = append(im.Notes, fmt.Sprintf("%s: the servers are %s, not an object of named servers; skipped", src, servers.kind))
		return
	}
	for _, m := range servers.members {
		e, ok := im.jsonEntry(src, m.key, m.value, ic)
		if ok {
			im.add(e)
		}
	}
}

// jsonEntry maps one server of a JSON client file.
func (im *Importer) jsonEntry(src Source, name string, v *node, ic interpCtx) (*Entry, bool) {
	e := &Entry{Original: name, Sources: []Source{src}}
	if v.kind != kindObject {
		im.Notes = append(im.Notes, fmt.Sprintf("%s: server %s is %s, not an object; skipped", src, quote(name), v.kind))
		return nil, false
	}
	var typ string
	var urlKey string
	seen := make(map[string]bool)
	for _, m := range v.members {
		k, f := m.key, m.value
		if seen[k] {
			e.notef("%s is set twice; the last one is used", quote(k))
		}
		seen[k] = true
		switch k {
		case "command":
			e.Command, _ = e.stringField(k, f, ic)
		case "args":
			e.Args = e.stringsField(k, f, ic)
		case "env":
			e.Env = e.mapField(k, f, ic)
		case "cwd":
			e.Cwd, _ = e.stringField(k, f, ic)
		case "headers":
			e.Headers = e.mapField(k, f, ic)
		case "type", "transport":
			typ, _ = e.stringField(k, f, interpCtx{})
		case "url", "httpUrl", "serverUrl":
			if u, ok := e.stringField(k, f, ic); ok {
				if e.URL != "" && e.URL != u {
					e.notef("%s and %s are both set; %s is used", urlKey, k, urlKey)
					continue
				}
				e.URL, urlKey = u, k
			}
		case "disabled":
			if f.kind == kindBool {
				e.Disabled = e.Disabled || f.boolean
			}
		case "enabled":
			if f.kind == kindBool && !f.boolean {
				e.Disabled = true
			}
		case "includeTools":
			e.Allow = globs(e.stringsField(k, f, interpCtx{}))
		case "excludeTools":
			e.Deny = globs(e.stringsField(k, f, interpCtx{}))
		case "timeout":
			// Gemini CLI's and Claude Code's per-call timeout, in milliseconds.
			if ms, ok := number(f); ok && (src.Client == Gemini || src.Client == ClaudeCode) {
				e.CallTimeout = e.duration(k, ms, time.Millisecond)
			} else {
				e.notef("timeout is not mapped: set call_timeout by hand")
			}
		case "headersHelper":
			e.notef("headersHelper is not run: Manifold does not run a client's scripts; put the headers in headers, with ${VAR} for secrets")
		case "trust", "autoApprove", "alwaysAllow":
			e.notef("%s is not mapped: Manifold approves no call itself (the client asks); choose which tools exist with tools.allow or tools.deny", k)
		case "source":
			// Zed's older entries say "custom"; nothing to map.
		case "description", "alwaysLoad":
			// Nothing to map: a description of the entry, a client's loading hint.
		case "envFile":
			e.notef("envFile is not read: copy the variables it sets into env, or set them where manifold runs")
		case "oauth", "authProviderType", "targetAudience", "targetServiceAccount":
			e.notef("%s is not mapped: Manifold does not sign in to remote servers with OAuth yet; give a token in headers", k)
		default:
			e.notef("%s is not mapped: Manifold has no equivalent", quote(k))
		}
	}
	im.finish(e, typ, urlKey)
	return e, true
}

// finish decides the transport, resolves paths, moves secrets out and
// names the entry.
func (im *Importer) finish(e *Entry, typ, urlKey string) {
	src := e.Sources[0]
	switch strings.ToLower(typ) {
	case "", "stdio":
	case "http", "streamable-http", "streamable_http", "streamablehttp", "streamable":
	case "sse":
		e.Transport = config.TransportSSE
	default:
		e.notef("type %s is not a transport Manifold knows; it is left out", quote(typ))
	}
	if e.URL != "" && typ == "" {
		if (src.Client == Gemini && urlKey == "url") || strings.HasSuffix(strings.TrimRight(e.URL, "/"), "/sse") {
			e.Transport = config.TransportSSE
		}
	}
	if e.URL != "" && e.Command != "" {
		e.notef("both command and a URL are set; the URL is left out")
		e.URL, e.Headers, e.Transport = "", nil, ""
	}
	if e.isRemote() {
		for _, k := range []string{"args", "env", "cwd"} {
			if (k == "args" && e.Args != nil) || (k == "env" && e.Env != nil) || (k == "cwd" && e.Cwd != "") {
				e.notef("%s is left out: it is only for a local server", k)
			}
		}
		e.Args, e.Env, e.Cwd = nil, nil, ""
	} else if e.Headers != nil {
		e.notef("headers are left out: they are only for a remote server")
		e.Headers = nil
	}
	dir := ""
	if src.Scope == ScopeProject {
		dir = projectDir(src.Path)
	} else if src.Project != "" {
		dir = src.Project
	}
	if e.Command != "" && isRelativePath(e.Command) {
		if dir != "" {
			e.escapes("command", dir, e.Command)
			e.Command = escapeDollar(filepath.Join(dir, e.Command))
		} else {
			e.notef("command %s is relative to a folder the client chooses; in proxy.toml it is relative to the file's folder", quote(e.Command))
		}
	}
	switch {
	case e.Cwd != "" && !isAbsPath(e.Cwd) && dir != "":
		e.escapes("cwd", dir, e.Cwd)
		e.Cwd = escapeDollar(filepath.Join(dir, e.Cwd))
	case e.Cwd != "" && !isAbsPath(e.Cwd):
		e.notef("cwd %s is relative to a folder the client chooses; in proxy.toml it is relative to the file's folder", quote(e.Cwd))
	case e.Cwd == "" && dir != "" && !e.isRemote():
		// The client runs a project's servers in the project folder.
		e.Cwd = escapeDollar(dir)
	}
	if strings.TrimSpace(e.Original) == "" {
		e.Original = "server"
	}
	im.moveSecrets(e)
	var need []string
	for _, v := range e.Vars {
		if !slices.Contains(e.SetVars, v) {
			need = append(need, v)
		}
	}
	if len(need) > 0 {
		e.notef("needs %s set where manifold runs (manifold refuses to start a config with an unset ${VAR})", strings.Join(need, ", "))
	}
}

// escapes notes a relative path p of a project's file that leads out of
// the project folder dir: the import shows where it really points.
func (e *Entry) escapes(k, dir, p string) {
	abs := filepath.Join(dir, unescape(p))
	if rel, err := filepath.Rel(dir, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		e.notef("%s %s leads out of the project folder %s, to %s: check that you want to run it", k, quote(unescape(p)), dir, abs)
	}
}

// isRelativePath reports whether p is a relative path with a folder
// ("./bin/x", "tools/x"), not a bare name looked up in PATH and not an
// absolute path of any OS.
func isRelativePath(p string) bool {
	return strings.ContainsAny(p, `/\`) && !isAbsPath(p)
}

// isAbsPath reports whether p is absolute on some OS, starts at the home
// folder or with a variable: anything but a path relative to a folder.
func isAbsPath(p string) bool {
	if strings.HasPrefix(p, "${") || filepath.IsAbs(p) || strings.HasPrefix(p, `\`) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return true
	}
	return len(p) > 2 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// add merges e into the entries: an entry for the same server gets e's
// source; another one gets a name of its own.
func (im *Importer) add(e *Entry) {
	if e.Command == "" && e.URL == "" {
		im.Notes = append(im.Notes, fmt.Sprintf("%s: %s has neither a command nor a URL (a server the client provides itself?); left out", e.Sources[0], quote(e.Original)))
		return
	}
	if isManifold(e) {
		im.self = append(im.self, *e)
		im.Notes = append(im.Notes, fmt.Sprintf("%s: %s is Manifold itself; left out (it would start itself)", e.Sources[0], quote(e.Original)))
		return
	}
	if prev, ok := im.byKey[e.key()]; ok {
		prev.Sources = append(prev.Sources, e.Sources...)
		// The merged server is as restricted as the strictest client had it.
		for _, d := range e.Deny {
			if !slices.Contains(prev.Deny, d) {
				prev.Deny = append(prev.Deny, d)
			}
		}
		switch {
		case e.Allow == nil:
		case prev.Allow == nil:
			prev.Allow = e.Allow
		default:
			prev.Allow = slices.DeleteFunc(prev.Allow, func(a string) bool { return !slices.Contains(e.Allow, a) })
			if len(prev.Allow) == 0 {
				prev.Disabled = true
				prev.notef("the clients allow no tool in common; imported disabled")
			}
		}
		if !maps.Equal(prev.Env, e.Env) || !maps.Equal(prev.Headers, e.Headers) {
			prev.notef("%s sets other env or headers for the same server; the first are kept", e.Sources[0])
		}
		return
	}
	e.Name = im.uniqueName(e.Original)
	im.byKey[e.key()] = e
	im.entries = append(im.entries, e)
}

// isManifold reports whether e runs Manifold: its command is a manifold
// binary, or the entry is named manifold and runs "serve".
func isManifold(e *Entry) bool {
	base := strings.ToLower(baseName(e.Command))
	return base == "manifold" || base == "manifold.exe" ||
		strings.EqualFold(e.Original, "manifold") && len(e.Args) > 0 && e.Args[0] == "serve"
}

// uniqueName makes name a valid server name no other entry has (prefixes
// compared as resource URI prefixes are, case and '_' or '-' alike).
func (im *Importer) uniqueName(name string) string {
	base := serverName(name)
	taken := func(n string) bool {
		for _, e := range im.entries {
			if config.URIPrefix(e.Name) == config.URIPrefix(n) {
				return true
			}
		}
		return false
	}
	n := base
	for i := 2; taken(n); i++ {
		suffix := "-" + strconv.Itoa(i)
		n = strings.TrimRight(base[:min(len(base), 32-len(suffix))], "_-") + suffix
	}
	return n
}

// serverName makes s a valid proxy.toml server name: letters, digits, '-'
// and single '_' (never "__", which would nest one prefix in another's
// namespace), starting with a letter or digit, at most 32 characters.
func serverName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-'):
			b.WriteRune(r)
		case r == '_' && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		default:
			if str := b.String(); str != "" && !strings.HasSuffix(str, "-") && !strings.HasSuffix(str, "_") {
				b.WriteByte('-')
			}
		}
	}
	n := strings.TrimLeft(b.String(), "_-")
	if len(n) > 32 {
		n = n[:32]
	}
	n = strings.TrimRight(n, "_-")
	if n == "" {
		return "server"
	}
	return n
}

// moveSecrets replaces every inline secret of e with a ${VAR} and notes
// which variable to set.
func (im *Importer) moveSecrets(e *Entry) {
	name := serverName(e.Original)
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		v := e.Env[k]
		if !inlineSecret(k, v) {
			continue
		}
		hint := k
		if !validVarName(k) {
			hint = varName(name, k)
		}
		vn := im.secretVar(hint, varName(name, k), v)
		e.Env[k] = "${" + vn + "}"
		e.secretNote(vn, fmt.Sprintf("env %s", k))
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		v := e.Headers[k]
		if !inlineSecret(k, v) {
			continue
		}
		if scheme, cred, ok := strings.Cut(v, " "); ok && (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "basic")) && cred != "" {
			vn := im.secretVar(varName(name, "token"), varName(name, k), cred)
			e.Headers[k] = scheme + " ${" + vn + "}"
			e.secretNote(vn, "header "+k)
			continue
		}
		vn := im.secretVar(varName(name, k), varName(name, k, "2"), v)
		e.Headers[k] = "${" + vn + "}"
		e.secretNote(vn, "header "+k)
	}
	if e.URL != "" && !strings.Contains(e.URL, "${") && len(redact.URLSecrets(unescape(e.URL))) > 0 {
		vn := im.secretVar(varName(name, "url"), varName(name, "url", "2"), e.URL)
		e.URL = "${" + vn + "}"
		e.secretNote(vn, "the URL (it holds a credential)")
	}
	for i := 0; i < len(e.Args); i++ {
		a := e.Args[i]
		if strings.Contains(a, "${") {
			continue
		}
		flag, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "-") && redact.SecretKey(flag) && hasVal && val != "":
			vn := im.secretVar(varName(name, flag), varName(name, flag, strconv.Itoa(i)), val)
			e.Args[i] = a[:len(a)-len(val)] + "${" + vn + "}"
			e.secretNote(vn, "argument "+quote(a[:len(a)-len(val)]))
		case strings.HasPrefix(a, "-") && redact.SecretKey(flag) && !hasVal && i+1 < len(e.Args) &&
			!strings.HasPrefix(e.Args[i+1], "-") && !strings.Contains(e.Args[i+1], "${"):
			vn := im.secretVar(varName(name, flag), varName(name, flag, strconv.Itoa(i+1)), e.Args[i+1])
			e.Args[i+1] = "${" + vn + "}"
			e.secretNote(vn, "the argument after "+quote(a))
			i++
		case len(redact.URLSecrets(unescape(a))) > 0 && strings.Contains(a, "://") || redact.Shapes(a) != a:
			vn := im.secretVar(varName(name, "arg", strconv.Itoa(i+1)), varName(name, "arg", strconv.Itoa(i+1), "2"), a)
			e.Args[i] = "${" + vn + "}"
			e.secretNote(vn, fmt.Sprintf("argument %d", i+1))
		}
	}
}

// unescape turns a proxy.toml literal back into the client's text.
func unescape(s string) string { return strings.ReplaceAll(s, "$$", "$") }

func (e *Entry) secretNote(vn, what string) {
	e.SetVars = append(e.SetVars, vn)
	e.notef("%s held an inline secret; it is not copied: set %s where manifold runs to the value in %s", what, vn, e.Sources[0].Path)
}

// inlineSecret reports whether the value v under key k is a secret written
// out: a credential's key or a credential's shape, and no ${VAR} of its own.
func inlineSecret(k, v string) bool {
	if v == "" || strings.Contains(v, "${") {
		return false
	}
	raw := unescape(v)
	return (redact.SecretKey(k) && len(raw) >= 1) || redact.Shapes(raw) != raw
}

// secretVar returns the variable that stands for value: want, unless
// another secret already took it; then alt, then alt_2, alt_3...
func (im *Importer) secretVar(want, alt, value string) string {
	im.secrets = append(im.secrets, unescape(value))
	sum := sha256.Sum256([]byte(value))
	for i, n := 0, want; ; i++ {
		prev, taken := im.vars[n]
		if !taken || prev == sum {
			im.vars[n] = sum
			return n
		}
		switch i {
		case 0:
			n = alt
		default:
			n = alt + "_" + strconv.Itoa(i+1)
		}
	}
}

// globs turns tool names into globs that match them literally.
func globs(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "" {
			continue
		}
		var b strings.Builder
		for _, r := range n {
			if strings.ContainsRune(`*?[]\`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		out = append(out, b.String())
	}
	return out
}

// --- fields ---------------------------------------------------------------

func quote(s string) string { return strconv.QuoteToASCII(s) }

func (e *Entry) stringField(k string, f *node, ic interpCtx) (string, bool) {
	if f.kind != kindString {
		e.notef("%s is %s, not a string; left out", k, f.kind)
		return "", false
	}
	if f.badUTF8 {
		e.notef("%s holds bytes that are not UTF-8; they were replaced with U+FFFD", k)
	}
	return e.interp(k, f.str, ic), true
}

func (e *Entry) interp(k, s string, ic interpCtx) string {
	t := ic.translate(s)
	for _, v := range t.vars {
		if !slices.Contains(e.Vars, v) {
			e.Vars = append(e.Vars, v)
		}
	}
	for _, id := range t.inputs {
		v := ic.inputs[id]
		if !slices.Contains(e.SetVars, v) {
			e.SetVars = append(e.SetVars, v)
			e.notef("%s asks for the input %s; set %s where manifold runs to its value", e.Sources[0].Client.Title(), quote(id), v)
		}
	}
	if len(t.unresolved) > 0 {
		e.Disabled = true
		e.notef("%s uses %s, which only %s can resolve; imported disabled: write the value in and remove disabled", k, strings.Join(t.unresolved, ", "), e.Sources[0].Client.Title())
	}
	return t.out
}

func (e *Entry) stringsField(k string, f *node, ic interpCtx) []string {
	if f.kind != kindArray {
		e.notef("%s is %s, not an array of strings; left out", k, f.kind)
		return nil
	}
	out := []string{}
	for i, el := range f.elems {
		switch el.kind {
		case kindString:
			if el.badUTF8 {
				e.notef("%s[%d] holds bytes that are not UTF-8; they were replaced with U+FFFD", k, i)
			}
			out = append(out, e.interp(k, el.str, ic))
		case kindNumber, kindBool:
			out = append(out, escapeDollar(scalar(el)))
		default:
			e.notef("%s[%d] is %s, not a string; left out", k, i, el.kind)
		}
	}
	return out
}

func (e *Entry) mapField(k string, f *node, ic interpCtx) map[string]string {
	if f.kind != kindObject {
		e.notef("%s is %s, not an object of strings; left out", k, f.kind)
		return nil
	}
	out := make(map[string]string)
	for _, m := range f.members {
		switch m.value.kind {
		case kindString:
			out[m.key] = e.interp(k+"."+m.key, m.value.str, ic)
		case kindNumber, kindBool:
			out[m.key] = escapeDollar(scalar(m.value))
		default:
			e.notef("%s.%s is %s, not a string; left out", k, quote(m.key), m.value.kind)
		}
	}
	return out
}

func scalar(n *node) string {
	if n.kind == kindBool {
		return strconv.FormatBool(n.boolean)
	}
	return n.str
}

func number(n *node) (float64, bool) {
	if n == nil || n.kind != kindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(n.str, 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// duration converts n units; out of range (not positive, or above a day)
// is noted and left out.
func (e *Entry) duration(k string, n float64, unit time.Duration) time.Duration {
	d := time.Duration(n * float64(unit))
	if n <= 0 || n*float64(unit) > float64(24*time.Hour) || d < time.Millisecond {
		e.notef("%s = %v is out of range (1 ms to 24 h); left out", k, n)
		return 0
	}
	return d.Round(time.Millisecond)
}

// --- Codex ----------------------------------------------------------------

func (im *Importer) addCodex(loc Location, data []byte) error {
	if err := tomldepth.Check(string(data)); err != nil {
		return fmt.Errorf("%s:%w", loc.Path, err)
	}
	var doc map[string]any
	md, err := toml.Decode(strings.TrimPrefix(string(data), "\uFEFF"), &doc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d:%d: invalid TOML: %s", loc.Path, pe.Position.Line, pe.Position.Col, redact.Shapes(pe.Message))
		}
		return fmt.Errorf("%s: invalid TOML: %s", loc.Path, redact.Shapes(err.Error()))
	}
	raw, ok := doc["mcp_servers"]
	if !ok {
		return nil
	}
	src := Source{Client: Codex, Scope: loc.Scope, Path: loc.Path}
	servers, ok := raw.(map[string]any)
	if !ok {
		im.Notes = append(im.Notes, fmt.Sprintf("%s: mcp_servers is not a table; skipped", src))
		return nil
	}
	// Document order: the order of the keys in the file.
	var names []string
	for _, k := range md.Keys() {
		if len(k) >= 2 && k[0] == "mcp_servers" && !slices.Contains(names, k[1]) {
			names = append(names, k[1])
		}
	}
	for _, n := range slices.Sorted(maps.Keys(servers)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, name := range names {
		v, ok := servers[name].(map[string]any)
		if !ok {
			im.Notes = append(im.Notes, fmt.Sprintf("%s: mcp_servers.%s is not a table; skipped", src, quote(name)))
			continue
		}
		im.add(im.codexEntry(src, name, v))
	}
	return nil
}

func (im *Importer) codexEntry(src Source, name string, v map[string]any) *Entry {
	e := &Entry{Original: name, Sources: []Source{src}}
	str := func(k string) (string, bool) {
		s, ok := v[k].(string)
		if !ok {
			e.notef("%s is not a string; left out", k)
			return "", false
		}
		return escapeDollar(s), true
	}
	strs := func(k string) []string {
		arr, ok := v[k].([]any)
		if !ok {
			e.notef("%s is not an array of strings; left out", k)
			return nil
		}
		out := []string{}
		for _, a := range arr {
			if s, ok := a.(string); ok {
				out = append(out, s)
			} else {
				e.notef("an element of %s is not a string; left out", k)
			}
		}
		return out
	}
	table := func(k string) map[string]string {
		m, ok := v[k].(map[string]any)
		if !ok {
			e.notef("%s is not a table of strings; left out", k)
			return nil
		}
		out := make(map[string]string, len(m))
		for mk, mv := range m {
			if s, ok := mv.(string); ok {
				out[mk] = s
			} else {
				e.notef("%s.%s is not a string; left out", k, quote(mk))
			}
		}
		return out
	}
	num := func(k string) (float64, bool) {
		switch n := v[k].(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, !math.IsInf(n, 0) && !math.IsNaN(n)
		}
		e.notef("%s is not a number; left out", k)
		return 0, false
	}
	for _, k := range slices.Sorted(maps.Keys(v)) {
		switch k {
		case "command":
			e.Command, _ = str(k)
		case "args":
			for _, a := range strs(k) {
				e.Args = append(e.Args, escapeDollar(a))
			}
			if e.Args == nil {
				e.Args = []string{}
			}
		case "env":
			if m := table(k); m != nil {
				if e.Env == nil {
					e.Env = make(map[string]string)
				}
				for mk, mv := range m {
					e.Env[mk] = escapeDollar(mv)
				}
			}
		case "env_vars":
			if e.Env == nil {
				e.Env = make(map[string]string)
			}
			for _, n := range strs(k) {
				if !validVarName(n) {
					e.notef("env_vars: %s is not a variable name; left out", quote(n))
					continue
				}
				if _, set := e.Env[n]; !set {
					e.Env[n] = "${" + n + "}"
					e.Vars = append(e.Vars, n)
				}
			}
		case "cwd":
			e.Cwd, _ = str(k)
		case "url":
			e.URL, _ = str(k)
		case "bearer_token_env_var":
			if n, ok := str(k); ok {
				if !validVarName(n) {
					e.notef("bearer_token_env_var: %s is not a variable name; left out", quote(n))
					continue
				}
				if e.Headers == nil {
					e.Headers = make(map[string]string)
				}
				e.Headers["Authorization"] = "Bearer ${" + n + "}"
				e.Vars = append(e.Vars, n)
			}
		case "http_headers":
			if m := table(k); m != nil {
				if e.Headers == nil {
					e.Headers = make(map[string]string)
				}
				for mk, mv := range m {
					if _, set := e.Headers[mk]; !set {
						e.Headers[mk] = escapeDollar(mv)
					}
				}
			}
		case "env_http_headers":
			if m := table(k); m != nil {
				if e.Headers == nil {
					e.Headers = make(map[string]string)
				}
				for mk, mv := range m {
					if !validVarName(mv) {
						e.notef("env_http_headers.%s: %s is not a variable name; left out", quote(mk), quote(mv))
						continue
					}
					e.Headers[mk] = "${" + mv + "}"
					e.Vars = append(e.Vars, mv)
				}
			}
		case "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec":
			n, ok := num(k)
			if !ok {
				continue
			}
			unit := time.Second
			if k == "startup_timeout_ms" {
				unit = time.Millisecond
			}
			if d := e.duration(k, n, unit); d > 0 {
				if k == "tool_timeout_sec" {
					e.CallTimeout = d
				} else {
					e.StartupTimeout = d
				}
			}
		case "enabled":
			if b, ok := v[k].(bool); ok && !b {
				e.Disabled = true
			}
		case "required":
			if b, ok := v[k].(bool); ok {
				e.Required = b
			}
		case "enabled_tools":
			e.Allow = globs(strs(k))
		case "disabled_tools":
			e.Deny = globs(strs(k))
		case "scopes", "oauth_resource":
			e.notef("%s is not mapped: Manifold does not sign in to remote servers with OAuth yet; give a token in headers", k)
		default:
			e.notef("%s is not mapped: Manifold has no equivalent", quote(k))
		}
	}
	im.finish(e, "", "url")
	return e
}
