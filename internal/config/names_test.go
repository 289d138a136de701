package config

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written checks of names.go say what these expressions say.
var (
	serverNameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)
	prefixRE      = regexp.MustCompile(`^[A-Za-z0-9_-]{0,32}$`)
	exposedNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	sha256RE      = regexp.MustCompile(`^[0-9A-Fa-f]{64}$`)
)

func checkNames(t *testing.T, s string) {
	t.Helper()
	for _, c := range []struct {
		name string
		got  bool
		re   *regexp.Regexp
	}{
		{"validServerName", validServerName(s), serverNameRE},
		{"validPrefix", validPrefix(s), prefixRE},
		{"validExposedName", validExposedName(s), exposedNameRE},
		{"validSHA256", validSHA256(s), sha256RE},
	} {
		if want := c.re.MatchString(s); c.got != want {
			t.Errorf("%s(%q) = %v, the expression %s says %v", c.name, s, c.got, c.re, want)
		}
	}
}

func TestNameChecksMatchExpressions(t *testing.T) {
	hex := strings.Repeat("0123456789abcdefABCDEF", 3)[:64]
	for _, s := range []string{
		"", "a", "_a", "-a", "a_b-c", "9", "a.b", "a b", "a\n", "é", "a/b",
		strings.Repeat("a", 31), strings.Repeat("a", 32), strings.Repeat("a", 33),
		"_" + strings.Repeat("a", 31), "_" + strings.Repeat("a", 32),
		strings.Repeat("x", 63), strings.Repeat("x", 64), strings.Repeat("x", 65),
		hex, hex[:63], hex + "0", hex[:63] + "g", hex + "\n",
	} {
		checkNames(t, s)
	}
}

func FuzzNameChecks(f *testing.F) {
	f.Add("files")
	f.Add(strings.Repeat("A", 64))
	f.Fuzz(func(t *testing.T, s string) { checkNames(t, s) })
}
