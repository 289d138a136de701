package catalog

import (
	"strings"
	"testing"
)

func TestSummaryText(t *testing.T) {
	if got := FirstSentence("# Files\n\n> Reads files. Writes them too.\n"); got != "Reads files." {
		t.Errorf("FirstSentence = %q", got)
	}
	if got := FirstSentence("# Only a heading\n"); got != "Only a heading" {
		t.Errorf("FirstSentence of a heading = %q", got)
	}
	if got := PlainLine("a\x1b[1mb\u202e  c\n\td"); got != "ab c d" {
		t.Errorf("PlainLine = %q", got)
	}
	if got := Cut("one two three four", 12); got != "one two…" {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("abc", 0); got != "" {
		t.Errorf("Cut to 0 = %q", got)
	}
	if got := Bound("éé", 3); got != "é" {
		t.Errorf("Bound = %q", got)
	}
	if got := FallbackText("Files", []string{"a", "b", "c", "d", "e"}); got != "Files; tools such as a, b, c, d, …" {
		t.Errorf("FallbackText = %q", got)
	}
	if got := Summary("Lead", nil, nil, nil); got != "" {
		t.Errorf("Summary of no line = %q", got)
	}
	lines := []SummaryLine{{Name: "files", Text: "Reads files.", Tools: "tools f__*"}}
	if got, want := Summary("Lead", lines, []string{"## files\n\nAll of it."}, nil), "Lead\n- files: Reads files. (tools f__*)\n\n## files\n\nAll of it."; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	many := make([]SummaryLine, 200)
	for i := range many {
		many[i] = SummaryLine{Name: strings.Repeat("s", 20), Text: strings.Repeat("x ", 100), Tools: "tools under their own names"}
	}
	if got := Summary("Lead", many, nil, nil); len(got) > InstructionsBudget || !strings.HasSuffix(got, "more servers.") {
		t.Errorf("Summary of many lines: %d bytes, ends %q", len(got), got[max(0, len(got)-20):])
	}
}
