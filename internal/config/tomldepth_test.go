package config

import (
	"strings"
	"testing"

	"github.com/manifold-mcp/manifold/internal/tomldepth"
)

// TestHostileNesting: a proxy.toml or policy file of deeply nested arrays
// or inline tables (which the TOML decoder takes time quadratic in the
// depth to read: a minute for 60 kB) is refused before it is decoded, with
// the file, the line where the nesting passes the bound, and the fix;
// nesting real configurations use is read as before.
func TestHostileNesting(t *testing.T) {
	deep := func(open, close string, n int) string {
		return "[servers.a]\ncommand = \"x\"\n\nenv = " + strings.Repeat(open, n) + strings.Repeat(close, n) + "\n"
	}
	for name, src := range map[string]string{
		"arrays":        deep("[", "]", 30000),
		"inline tables": deep("{a=", "}", 30000),
		"mixed":         deep("[{a=", "}]", 15000),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("proxy.toml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), "proxy.toml:4:1:") || !strings.Contains(err.Error(), "nested more than 64 deep") || !strings.Contains(err.Error(), "[tables]") {
				t.Errorf("Parse: %v, want the nesting refused at proxy.toml:4:1 with the fix", err)
			}
			_, err = ParsePolicyFile("team.toml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), "team.toml:4:1:") || !strings.Contains(err.Error(), "nested more than 64 deep") {
				t.Errorf("ParsePolicyFile: %v, want the nesting refused at team.toml:4:1", err)
			}
		})
	}
	ok := "[servers.a]\ncommand = \"x\"\nargs = [\"[[[[\", '{{{{']\n# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n" +
		"description = \"\"\"" + strings.Repeat("[", 200) + "\"\"\"\n"
	if err := tomldepth.Check(ok); err != nil {
		t.Errorf("brackets in strings and comments counted: %v", err)
	}
	if err := tomldepth.Check("x = " + strings.Repeat("[", 64) + strings.Repeat("]", 64) + "\n"); err != nil {
		t.Errorf("64 levels refused: %v", err)
	}
}
