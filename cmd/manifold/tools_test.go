package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/proxy"
)

func TestPrintCatalogFits(t *testing.T) {
	long := "files__" + strings.Repeat("a_very_long_tool_name_", 2) + "x"
	entries := []proxy.Entry{
		{Kind: "tool", Exposed: "files__read", Server: "files", Original: "read", Visible: true, ReadOnly: true, Description: strings.Repeat("Reads a file. ", 20)},
		{Kind: "tool", Exposed: long, Server: "files", Original: "a.very.long", Visible: true, Description: "Long."},
		{Kind: "tool", Exposed: "files__write", Server: "files", Original: "write", Verdict: "hidden: denied by servers.files.tools.deny \"write\" (proxy.toml:4)"},
		{Kind: "tool", Exposed: "files__move", Server: "files", Original: "move", Held: true, Verdict: "hidden: pin: awaits review: run `manifold approve files/move`"},
		{Kind: "prompt", Exposed: "files__greet", Server: "files", Original: "greet", Visible: true},
		{Kind: "resource", Exposed: "files+file:///" + strings.Repeat("deep/", 20) + "x.txt", Server: "files", Original: "file:///" + strings.Repeat("deep/", 20) + "x.txt", Visible: true},
		{Kind: "template", Exposed: "files+file:///{path}", Server: "files", Original: "file:///{path}", Visible: true, Description: "Any file."},
	}
	sts := []proxy.ServerStatus{{Name: "files", State: "up"}, {Name: "gh", State: "failed", Err: "upstream \"gh\": exited with status 1"}}
	var b bytes.Buffer
	printCatalog(&b, entries, sts, 100)
	out := b.String()
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "files+file:///deep/") && !strings.Contains(line, " ") {
			continue // a URI longer than the width, alone on its line: never cut
		}
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("line of %d columns, want at most 100: %q", n, line)
		}
	}
	for _, want := range []string{
		long + "\n",          // never cut: on a line of its own
		"(a.very.long) Long", // the original where the exposed name does not end in it
		"files__write", "hidden",
		"files+file:///{path}", "template",
		"resource",
		"files__move", "held",
		"4 tools, 1 prompt, 1 resource, 1 template; 1 hidden by policy (manifold explain NAME says why)\n1 held: changed since approved, awaiting review (manifold approve lists them)\n",
		`server "gh" is failed: upstream "gh": exited with status 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

func TestPendingLine(t *testing.T) {
	sts := []proxy.ServerStatus{{Name: "files", State: "up"}, {Name: "everything", State: "starting"}, {Name: "memory", State: "starting"}}
	if got, want := pendingLine(sts, 3500*time.Millisecond), "manifold: waiting for everything, memory to start (3s)"; got != want {
		t.Errorf("pendingLine = %q, want %q", got, want)
	}
	if got := pendingLine(sts[:1], time.Second); got != "" {
		t.Errorf("pendingLine with nothing starting = %q, want \"\"", got)
	}
	var many []proxy.ServerStatus
	for i := range 40 {
		many = append(many, proxy.ServerStatus{Name: fmt.Sprintf("server%d", i), State: "starting"})
	}
	if n := utf8.RuneCountInString(pendingLine(many, time.Second)); n > 99 {
		t.Errorf("pendingLine is %d columns, want at most 99", n)
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Errorf("a buffer is taken for a terminal")
	}
}

func TestPrintSize(t *testing.T) {
	size := proxy.CatalogSize{Tools: 3, FullBytes: 4001, SearchBytes: 1200, MetaBytes: 1000, Servers: []proxy.ServerSize{
		{Server: "files", Tools: 2, FullBytes: 3000, SearchBytes: 199},
		{Server: "git", Tools: 1, FullBytes: 1000},
	}}
	var b bytes.Buffer
	printSize(&b, size)
	want := `SERVER          TOOLS  FULL BYTES  FULL TOKENS  SEARCH BYTES  SEARCH TOKENS
files           2      3000        750          199           50
git             1      1000        250          0             0
(search tools)                                  1000          250
total           3      4001        1001         1200          300

Bytes are those of the tools/list result's JSON; tokens are estimated as bytes/4 (the real count depends on the model's tokenizer).
The search list is 30.0 % of the full list. Per-server rows are the servers' shares: in search mode, their tools listed by catalog.always.
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printSize (-want +got):\n%s\ngot:\n%s", diff, b.String())
	}
}
