package clientconf

import (
	"strings"
)

// Each client has its own variable syntax, or none; proxy.toml has one:
// ${VAR}, ${VAR:-default}, and $$ for a literal "$". This file translates.

// style is a client's variable syntax.
type style int

const (
	// styleLiteral: no interpolation (Claude Desktop, Codex, Zed): every "$"
	// is literal.
	styleLiteral style = iota
	// styleShell: ${VAR} and ${VAR:-default} (Claude Code).
	styleShell
	// styleEditor: ${env:VAR}, ${userHome}, ${workspaceFolder}, ${input:ID}
	// and the like (Cursor, VS Code, Windsurf).
	styleEditor
	// styleGemini: $VAR and ${VAR} (Gemini CLI).
	styleGemini
)

func clientStyle(c Client) style {
	switch c {
	case ClaudeCode:
		return styleShell
	case Cursor, VSCode, Windsurf:
		return styleEditor
	case Gemini:
		return styleGemini
	}
	return styleLiteral
}

// interpCtx is what a translation may resolve.
type interpCtx struct {
	style     style
	home      string            // ${userHome}
	workspace string            // ${workspaceFolder}; "" when the file is not a project's
	inputs    map[string]string // VS Code ${input:ID} → the variable that stands for it
}

// translated is the result of translating one string.
type translated struct {
	out string
	// vars are the variables the value now references (${VAR}).
	vars []string
	// unresolved are the client's own variables that Manifold cannot
	// resolve, as written (${workspaceFolder} of a user file, ${file:…}).
	unresolved []string
	// inputs are the ids of the VS Code inputs used.
	inputs []string
}

// translate rewrites s, in the client's syntax, as a proxy.toml value.
func (ic interpCtx) translate(s string) translated {
	var t translated
	if !strings.Contains(s, "$") {
		t.out = s
		return t
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if ic.style == styleLiteral {
			b.WriteString("$$")
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end >= 0 {
				body := s[i+2 : i+2+end]
				if rep, ok := ic.variable(body, &t); ok {
					b.WriteString(rep)
					i += 2 + end
					continue
				}
				t.unresolved = append(t.unresolved, "${"+body+"}")
			}
			b.WriteString("$$")
			continue
		}
		if ic.style == styleGemini {
			j := i + 1
			for j < len(s) && isVarByte(s[j], j == i+1) {
				j++
			}
			if j > i+1 {
				name := s[i+1 : j]
				t.vars = append(t.vars, name)
				b.WriteString("${" + name + "}")
				i = j - 1
				continue
			}
		}
		b.WriteString("$$")
	}
	t.out = b.String()
	return t
}

// variable translates the body of a ${…}; ok is false when it cannot.
func (ic interpCtx) variable(body string, t *translated) (string, bool) {
	switch ic.style {
	case styleShell, styleGemini:
		name, def, hasDef := strings.Cut(body, ":-")
		if !validVarName(name) || (ic.style == styleGemini && hasDef) || strings.ContainsAny(def, "${}") {
			return "", false
		}
		t.vars = append(t.vars, name)
		return "${" + body + "}", true
	case styleEditor:
		switch {
		case strings.HasPrefix(body, "env:") && validVarName(body[4:]):
			t.vars = append(t.vars, body[4:])
			return "${" + body[4:] + "}", true
		case body == "userHome" && ic.home != "":
			return escapeDollar(ic.home), true
		case body == "workspaceFolder" && ic.workspace != "":
			return escapeDollar(ic.workspace), true
		case body == "workspaceFolderBasename" && ic.workspace != "":
			return escapeDollar(baseName(ic.workspace)), true
		case body == "pathSeparator" || body == "/":
			return "/", true
		case strings.HasPrefix(body, "input:"):
			if v, ok := ic.inputs[body[6:]]; ok {
				t.inputs = append(t.inputs, body[6:])
				return "${" + v + "}", true
			}
		}
	}
	return "", false
}

func baseName(p string) string {
	p = strings.TrimRight(p, `/\`)
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// escapeDollar writes s, a literal, as a proxy.toml value.
func escapeDollar(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func isVarByte(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// validVarName is internal/config's rule for a ${VAR} name.
func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isVarByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

// varName makes a variable name of parts: upper case, every run of other
// characters an underscore, never starting with a digit.
func varName(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		for _, r := range strings.ToUpper(p) {
			if r < 0x80 && isVarByte(byte(r), false) {
				b.WriteRune(r)
			} else if s := b.String(); s != "" && !strings.HasSuffix(s, "_") {
				b.WriteByte('_')
			}
		}
		if s := b.String(); s != "" && !strings.HasSuffix(s, "_") {
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" {
		s = "SECRET"
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "MCP_" + s
	}
	return s
}
