package clientconf

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/manifold-mcp/manifold/internal/tomldepth"
)

// Server is the entry [Connect] writes into a client's file: Manifold.
type Server struct {
	// Name is the entry's key; if empty, "manifold".
	Name string
	// Command and Args start Manifold over stdio: absolute paths, since GUI
	// clients have no PATH and an unknown working directory.
	Command string
	Args    []string
	// URL, if set, makes a remote entry (streamable HTTP) instead.
	URL string
	// CallTimeout is the longest a call through Manifold may take (its
	// longest call_timeout). Where the client has a per-call timeout of its
	// own, it is set above this, so that Manifold's message about a slow
	// call reaches the model rather than the client's cut. If zero,
	// Manifold's default (60s).
	CallTimeout time.Duration
	// AlwaysLoad sets Claude Code's alwaysLoad: every tool always in the
	// prompt, never deferred behind tool search.
	AlwaysLoad bool
	// Modern opts Codex into MCP 2026-07-28 with Manifold: its feature
	// flag ([features] mcp_2026_07_28, under development in Codex and off
	// by default) and, for a stdio entry, the entry's
	// CODEX_MCP_PROTOCOL_VERSION, without which Codex stays in the
	// initialize era over stdio. Other clients choose their era
	// themselves.
	Modern bool
}

// codexFeature is Codex's feature flag for MCP 2026-07-28, and
// codexVersionEnv the variable of a stdio entry that makes Codex speak it.
const (
	codexFeature    = "mcp_2026_07_28"
	codexVersionEnv = "CODEX_MCP_PROTOCOL_VERSION"
)

// clientTimeout is the per-call timeout to give a client: Manifold's
// longest call plus a margin for its own answer.
func (s Server) clientTimeout() time.Duration {
	d := s.CallTimeout
	if d <= 0 {
		d = 60 * time.Second
	}
	return (d + 30*time.Second).Round(time.Second)
}

// ErrNoRemote is returned (wrapped) by [Connect] for a client whose file
// takes no remote servers.
var ErrNoRemote = errors.New("this client's file takes local servers only")

// Container is the key under which client c keeps its servers.
func Container(c Client) string {
	switch c {
	case VSCode:
		return "servers"
	case Zed:
		return "context_servers"
	case Codex:
		return "mcp_servers"
	}
	return "mcpServers"
}

// Connect returns data, client c's file (nil or empty when it does not
// exist yet), with s as its entry s.Name and without the entries named in
// remove. Everything else in the file is kept byte for byte: comments,
// order, formatting. The result is checked by parsing it again: an edit
// that would change anything else is refused with an error that shows the
// entry to add by hand.
func Connect(c Client, data []byte, s Server, remove []string) ([]byte, error) {
	if s.Name == "" {
		s.Name = "manifold"
	}
	if s.URL != "" && c == ClaudeDesktop {
		return nil, fmt.Errorf("%s: %w; add a remote server as a Connector in its settings, or connect over stdio", c.Title(), ErrNoRemote)
	}
	if c == Codex {
		return connectTOML(data, s, remove)
	}
	return connectJSON(c, data, s, remove)
}

// Snippet returns the entry Connect writes for client c, as it appears in
// the client's file (JSON, or TOML for Codex), for a message that asks
// the user to add it by hand.
func Snippet(c Client, s Server) string {
	if s.Name == "" {
		s.Name = "manifold"
	}
	if c == Codex {
		if s.Modern {
			return codexTable(s) + "\n[features]\n" + codexFeature + " = true\n"
		}
		return codexTable(s)
	}
	return strconv.Quote(s.Name) + ": " + renderJSON(entryValue(c, s), "  ", 0)
}

// --- JSON -----------------------------------------------------------------

// jsonValue is a value to render: string, []string, map entries in order,
// int or bool.
type jsonValue any

type jsonMember struct {
	key string
	val jsonValue
}

// entryValue is Manifold's entry in client c's format.
func entryValue(c Client, s Server) []jsonMember {
	var m []jsonMember
	switch {
	case s.URL != "" && (c == ClaudeCode || c == VSCode):
		m = []jsonMember{{"type", "http"}, {"url", s.URL}}
	case s.URL != "" && c == Windsurf:
		m = []jsonMember{{"serverUrl", s.URL}}
	case s.URL != "" && c == Gemini:
		m = []jsonMember{{"httpUrl", s.URL}}
	case s.URL != "":
		m = []jsonMember{{"url", s.URL}}
	default:
		args := s.Args
		if args == nil {
			args = []string{}
		}
		if c == ClaudeCode || c == VSCode {
			m = append(m, jsonMember{"type", "stdio"})
		}
		m = append(m, jsonMember{"command", s.Command}, jsonMember{"args", args})
	}
	switch c {
	case ClaudeCode:
		// Claude Code's per-call timeout, in milliseconds.
		m = append(m, jsonMember{"timeout", int(s.clientTimeout() / time.Millisecond)})
		if s.AlwaysLoad {
			m = append(m, jsonMember{"alwaysLoad", true})
		}
	case Gemini:
		// Gemini CLI's default request timeout is 10 minutes.
		if t := s.clientTimeout(); t > 10*time.Minute {
			m = append(m, jsonMember{"timeout", int(t / time.Millisecond)})
		}
	}
	return m
}

// renderJSON writes v indented with unit, as at depth (the depth of the
// line that holds it).
func renderJSON(v jsonValue, unit string, depth int) string {
	var b strings.Builder
	writeJSON(&b, v, unit, depth)
	return b.String()
}

func writeJSON(b *strings.Builder, v jsonValue, unit string, depth int) {
	switch v := v.(type) {
	case string:
		b.WriteString(jsonString(v))
	case []string:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(jsonString(s))
		}
		b.WriteByte(']')
	case []jsonMember:
		if len(v) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range v {
			b.WriteString(strings.Repeat(unit, depth+1))
			b.WriteString(jsonString(m.key) + ": ")
			writeJSON(b, m.val, unit, depth+1)
			if i < len(v)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat(unit, depth) + "}")
	case int:
		b.WriteString(strconv.Itoa(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	}
}

// jsonString quotes s as JSON does, without HTML escaping.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// indentUnit guesses the file's indentation: the white space before the
// first indented member name, or two spaces.
func indentUnit(src string) string {
	for line := range strings.Lines(src) {
		t := strings.TrimLeft(line, " \t")
		if len(t) < len(line) && strings.HasPrefix(t, `"`) {
			return line[:len(line)-len(t)]
		}
	}
	return "  "
}

func connectJSON(c Client, data []byte, s Server, remove []string) ([]byte, error) {
	src := string(data)
	container := Container(c)
	if strings.TrimSpace(src) == "" {
		out := "{\n  " + jsonString(container) + ": {\n    " + jsonString(s.Name) + ": " + renderJSON(entryValue(c, s), "  ", 2) + "\n  }\n}\n"
		return []byte(out), nil
	}
	before, err := parseJSONC(src)
	if err != nil {
		return nil, err
	}
	if before.kind != kindObject {
		return nil, fmt.Errorf("the file holds %s, not a JSON object; fix it first", before.kind)
	}
	if n := before.get(container); n != nil && n.kind != kindObject {
		return nil, fmt.Errorf("%s is %s, not an object of servers; fix it first", container, n.kind)
	}
	unit := indentUnit(src)
	cur := src
	for _, name := range remove {
		if name == s.Name {
			continue
		}
		root, err := parseJSONC(cur)
		if err != nil {
			return nil, err
		}
		if i := memberIndex(root.get(container), name); i >= 0 {
			cur = removeMember(cur, root.get(container), i)
		}
	}
	root, err := parseJSONC(cur)
	if err != nil {
		return nil, fmt.Errorf("internal error: the edit made invalid JSON (%w); nothing is written", err)
	}
	val := entryValue(c, s)
	if obj := root.get(container); obj == nil {
		cur = insertMember(cur, root, container, []jsonMember{{s.Name, val}}, unit, 0)
	} else if i := memberIndex(obj, s.Name); i >= 0 {
		old := obj.members[i].value
		if !reflect.DeepEqual(goValue(old), plain(val)) {
			text := renderJSON(val, unit, 2)
			if !multiline(cur, obj) {
				text = compactJSON(val)
			}
			cur = cur[:old.start] + text + cur[old.end:]
		}
	} else {
		cur = insertMember(cur, obj, s.Name, val, unit, 1)
	}
	if err := checkJSONEdit(before, cur, container, s.Name, plain(val), remove); err != nil {
		return nil, err
	}
	return []byte(cur), nil
}

// memberIndex is the index of the last member named key of obj, or -1.
func memberIndex(obj *node, key string) int {
	if obj == nil || obj.kind != kindObject {
		return -1
	}
	for i := len(obj.members) - 1; i >= 0; i-- {
		if obj.members[i].key == key {
			return i
		}
	}
	return -1
}

// multiline reports whether obj's closing brace starts its own line.
func multiline(src string, obj *node) bool {
	close := obj.end - 1
	lineStart := strings.LastIndexByte(src[:close], '\n') + 1
	return strings.TrimSpace(src[lineStart:close]) == ""
}

// compactJSON writes v on one line.
func compactJSON(v jsonValue) string {
	m, ok := v.([]jsonMember)
	if !ok {
		return renderJSON(v, "", 0)
	}
	if len(m) == 0 {
		return "{}"
	}
	parts := make([]string, len(m))
	for i, mb := range m {
		parts[i] = jsonString(mb.key) + ": " + compactJSON(mb.val)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// insertMember adds "key": val as the last member of obj, which lies at
// depth (0 for the root): after the last member, before the closing brace,
// in the file's style (one member a line, or all on one line).
func insertMember(src string, obj *node, key string, val jsonValue, unit string, depth int) string {
	close := obj.end - 1
	ml := multiline(src, obj)
	text := jsonString(key) + ": " + renderJSON(val, unit, depth+1)
	if !ml {
		text = jsonString(key) + ": " + compactJSON(val)
	}
	if len(obj.members) == 0 {
		inner := src[obj.start+1 : close]
		if strings.TrimSpace(inner) == "" {
			// An empty object in a file of many lines opens up.
			if ml || depth == 0 || strings.Count(src, "\n") > 1 {
				text = jsonString(key) + ": " + renderJSON(val, unit, depth+1)
				return src[:obj.start+1] + "\n" + strings.Repeat(unit, depth+1) + text + "\n" + strings.Repeat(unit, depth) + src[close:]
			}
			return src[:obj.start+1] + " " + text + " " + src[close:]
		}
		// Only comments inside: the member goes after them.
		lineStart := strings.LastIndexByte(src[:close], '\n') + 1
		if ml {
			return src[:lineStart] + strings.Repeat(unit, depth+1) + text + "\n" + src[lineStart:]
		}
		return src[:close] + " " + text + " " + src[close:]
	}
	last := obj.members[len(obj.members)-1].value
	// A trailing comma (JSONC) already separates the new member.
	p := &jsonParser{src: src, off: last.end}
	_ = p.space()
	comma := !(p.off < len(src) && src[p.off] == ',')
	var b strings.Builder
	b.WriteString(src[:last.end])
	if comma {
		b.WriteByte(',')
	}
	if ml {
		lineStart := strings.LastIndexByte(src[:close], '\n') + 1
		b.WriteString(src[last.end:lineStart])
		b.WriteString(strings.Repeat(unit, depth+1) + text + "\n")
		b.WriteString(src[lineStart:])
		return b.String()
	}
	rest := strings.TrimRight(src[last.end:close], " \t")
	b.WriteString(rest + " " + text + " ")
	b.WriteString(src[close:])
	return b.String()
}

// removeMember deletes member i of obj with its separating comma.
func removeMember(src string, obj *node, i int) string {
	m := obj.members
	switch {
	case len(m) == 1:
		p := &jsonParser{src: src, off: m[0].value.end}
		_ = p.space()
		end := m[0].value.end
		if p.off < len(src) && src[p.off] == ',' {
			end = p.off + 1
		}
		// Drop the member's line when it has nothing else.
		lineStart := strings.LastIndexByte(src[:m[0].start], '\n') + 1
		if strings.TrimSpace(src[lineStart:m[0].start]) == "" && lineStart > obj.start {
			return src[:lineStart] + strings.TrimPrefix(strings.TrimLeft(src[end:], " \t"), "\n")
		}
		return src[:m[0].start] + src[end:]
	case i == 0:
		return src[:m[0].start] + src[m[1].start:]
	default:
		return src[:m[i-1].value.end] + src[m[i].value.end:]
	}
}

// goValue turns a node into plain Go values for comparison.
func goValue(n *node) any {
	if n == nil {
		return nil
	}
	switch n.kind {
	case kindObject:
		m := make(map[string]any, len(n.members))
		for _, mb := range n.members {
			m[mb.key] = goValue(mb.value)
		}
		return m
	case kindArray:
		a := make([]any, len(n.elems))
		for i, e := range n.elems {
			a[i] = goValue(e)
		}
		return a
	case kindString:
		return n.str
	case kindNumber:
		if f, err := strconv.ParseFloat(n.str, 64); err == nil {
			return f
		}
		return n.str
	case kindBool:
		return n.boolean
	}
	return nil
}

// plain turns a jsonValue into what goValue returns for it.
func plain(v jsonValue) any {
	switch v := v.(type) {
	case []jsonMember:
		m := make(map[string]any, len(v))
		for _, mb := range v {
			m[mb.key] = plain(mb.val)
		}
		return m
	case []string:
		a := make([]any, len(v))
		for i, s := range v {
			a[i] = s
		}
		return a
	case int:
		return float64(v)
	}
	return v
}

// checkJSONEdit checks that after differs from before only in the entry
// name (set to want) and the removed entries.
func checkJSONEdit(before *node, after, container, name string, want any, remove []string) error {
	n, err := parseJSONC(after)
	if err != nil {
		return fmt.Errorf("internal error: the edit made invalid JSON (%w); nothing is written", err)
	}
	b, _ := goValue(before).(map[string]any)
	a, _ := goValue(n).(map[string]any)
	servers, _ := b[container].(map[string]any)
	expect := make(map[string]any, len(servers)+1)
	for k, v := range servers {
		if !slices.Contains(remove, k) {
			expect[k] = v
		}
	}
	expect[name] = want
	b[container] = expect
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("internal error: the edit would change more than the %q entry; nothing is written", name)
	}
	return nil
}

// --- Codex TOML -----------------------------------------------------------

var tomlHeader = regexp.MustCompile(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$`)

// codexTable is Manifold's [mcp_servers.NAME] table. Codex gives a server
// 10 s to start by default; Manifold waits for its own servers' first
// list, so it gets a minute. The call timeout is above Manifold's longest
// (Server.CallTimeout), so that Manifold's message about a slow call
// reaches the model first.
func codexTable(s Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", key(s.Name))
	if s.URL != "" {
		fmt.Fprintf(&b, "url = %s\n", str(s.URL))
	} else {
		fmt.Fprintf(&b, "command = %s\n", str(s.Command))
		fmt.Fprintf(&b, "args = %s\n", array(s.Args))
	}
	b.WriteString("startup_timeout_sec = 60\n")
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", int(s.clientTimeout()/time.Second))
	if s.Modern && s.URL == "" {
		fmt.Fprintf(&b, "env = { %s = %s }\n", codexVersionEnv, str(modernVersion))
	}
	return b.String()
}

// modernVersion is the protocol version Modern asks Codex for.
const modernVersion = "2026-07-28"

// setCodexFeature returns src with [features] mcp_2026_07_28 = true: the
// key's line replaced where the [features] table has it, else added under
// the table's header, else a new table at the end.
func setCodexFeature(src string) string {
	lines := splitKeepNL(src)
	keyLine := regexp.MustCompile(`^\s*` + codexFeature + `\s*=`)
	for i, l := range lines {
		m := tomlHeader.FindStringSubmatch(strings.TrimRight(l, "\r\n"))
		if m == nil || m[1] != "features" || strings.HasPrefix(strings.TrimSpace(l), "[[") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if tomlHeader.MatchString(strings.TrimRight(lines[j], "\r\n")) {
				break
			}
			if keyLine.MatchString(lines[j]) {
				lines[j] = codexFeature + " = true\n"
				return strings.Join(lines, "")
			}
		}
		lines[i] = strings.TrimRight(l, "\r\n") + "\n" + codexFeature + " = true\n"
		return strings.Join(lines, "")
	}
	if src != "" && !strings.HasSuffix(src, "\n") {
		src += "\n"
	}
	if strings.TrimSpace(src) != "" && !strings.HasSuffix(src, "\n\n") {
		src += "\n"
	}
	return src + "[features]\n" + codexFeature + " = true\n"
}

// codexFeatureOn reports whether a decoded Codex config has the feature on.
func codexFeatureOn(doc map[string]any) bool {
	f, _ := doc["features"].(map[string]any)
	on, _ := f[codexFeature].(bool)
	return on
}

// tableKeyIs reports whether the header key hk (as written between the
// brackets) is mcp_servers.name or one of its sub-tables.
func tableKeyIs(hk, name string) bool {
	parts, ok := splitTOMLKey(hk)
	return ok && len(parts) >= 2 && parts[0] == "mcp_servers" && parts[1] == name
}

// splitTOMLKey splits a dotted TOML key into its parts.
func splitTOMLKey(k string) ([]string, bool) {
	var doc map[string]any
	if _, err := toml.Decode("["+k+"]\n", &doc); err != nil {
		return nil, false
	}
	var parts []string
	cur := doc
	for len(cur) == 1 {
		var next map[string]any
		for k, v := range cur {
			parts = append(parts, k)
			next, _ = v.(map[string]any)
		}
		if next == nil {
			break
		}
		cur = next
	}
	return parts, true
}

// tableBlocks returns the line ranges [start, end) of the tables of
// mcp_servers.name and its sub-tables.
func tableBlocks(lines []string, name string) [][2]int {
	var out [][2]int
	in := -1
	for i, l := range lines {
		m := tomlHeader.FindStringSubmatch(strings.TrimRight(l, "\r\n"))
		if m == nil {
			continue
		}
		if in >= 0 {
			out = append(out, [2]int{in, i})
			in = -1
		}
		if tableKeyIs(m[1], name) {
			in = i
		}
	}
	if in >= 0 {
		out = append(out, [2]int{in, len(lines)})
	}
	return out
}

func connectTOML(data []byte, s Server, remove []string) ([]byte, error) {
	src := string(data)
	if err := tomldepth.Check(src); err != nil {
		return nil, fmt.Errorf("line %w", err)
	}
	var before map[string]any
	if _, err := toml.Decode(src, &before); err != nil {
		return nil, fmt.Errorf("invalid TOML (%v); fix it first", err)
	}
	var want map[string]any
	table := codexTable(s)
	if _, err := toml.Decode(table, &want); err != nil {
		return nil, err
	}
	wantEntry := want["mcp_servers"].(map[string]any)[s.Name]
	servers, _ := before["mcp_servers"].(map[string]any)
	if reflect.DeepEqual(servers[s.Name], wantEntry) && !slices.ContainsFunc(remove, func(n string) bool { _, ok := servers[n]; return ok && n != s.Name }) &&
		(!s.Modern || codexFeatureOn(before)) {
		return data, nil // already there, as it would be written
	}
	lines := splitKeepNL(src)
	drop := make([]bool, len(lines))
	for _, name := range append(slices.Clone(remove), s.Name) {
		for _, blk := range tableBlocks(lines, name) {
			for i := blk[0]; i < blk[1]; i++ {
				drop[i] = true
			}
		}
	}
	var b strings.Builder
	placed := false
	ours := tableBlocks(lines, s.Name)
	for i, l := range lines {
		if len(ours) > 0 && i == ours[0][0] {
			b.WriteString(table)
			placed = true
			// A blank line between it and the next table, as there was.
			next := i
			for next < len(lines) && drop[next] {
				next++
			}
			if next < len(lines) && strings.TrimSpace(lines[next]) != "" {
				b.WriteString("\n")
			}
		}
		if !drop[i] {
			b.WriteString(l)
		}
	}
	if !placed {
		out := b.String()
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		if strings.TrimSpace(out) != "" && !strings.HasSuffix(out, "\n\n") {
			out += "\n"
		}
		b.Reset()
		b.WriteString(out + table)
	}
	out := b.String()
	hand := table
	if s.Modern {
		hand += "\n[features]\n" + codexFeature + " = true\n"
		if !codexFeatureOn(before) {
			out = setCodexFeature(out)
		}
	}
	var after map[string]any
	if _, err := toml.Decode(out, &after); err != nil {
		return nil, fmt.Errorf("cannot edit this file safely (%v); add this by hand:\n%s", err, hand)
	}
	expect := make(map[string]any)
	for k, v := range servers {
		if !slices.Contains(remove, k) {
			expect[k] = v
		}
	}
	expect[s.Name] = wantEntry
	before["mcp_servers"] = expect
	if s.Modern {
		f, _ := before["features"].(map[string]any)
		f = maps.Clone(f)
		if f == nil {
			f = map[string]any{}
		}
		f[codexFeature] = true
		before["features"] = f
	}
	if !reflect.DeepEqual(after, before) {
		return nil, fmt.Errorf("cannot edit this file safely (its mcp_servers are not all [mcp_servers.NAME] tables, or its features are not one [features] table); add this by hand:\n%s", hand)
	}
	if out == src {
		return data, nil
	}
	return []byte(out), nil
}

func splitKeepNL(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		out = append(out, l)
	}
	return out
}
