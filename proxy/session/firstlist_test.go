package session

import (
	"testing"
	"time"
)

// TestFirstListWait: a first list waits as long as the client allows, by
// its clientInfo name, unless first_list_wait is set.
func TestFirstListWait(t *testing.T) {
	tests := []struct {
		set    time.Duration
		client string
		want   time.Duration
	}{
		{0, "codex-mcp-client", firstListWaitCodex},
		{0, "claude-code", firstListWaitPatient},
		{0, "gemini-cli-mcp-client", firstListWaitPatient},
		{0, "opencode", firstListWaitPatient},
		{0, "inspector-cli", firstListWaitPatient},
		{0, "mcporter", firstListWaitPatient},
		{0, "", firstListWaitOther},
		{0, "inspector-client", firstListWaitOther},
		{3 * time.Second, "codex-mcp-client", 3 * time.Second},
		{3 * time.Second, "claude-code", 3 * time.Second},
	}
	for _, tt := range tests {
		if got := FirstListWait(tt.client, tt.set); got != tt.want {
			t.Errorf("first_list_wait %v, client %q: waits %v, want %v", tt.set, tt.client, got, tt.want)
		}
	}
	if firstListWaitCodex >= time.Second {
		t.Errorf("Codex's wait %v is not under the second Codex gives a server", firstListWaitCodex)
	}
}

// TestListDeadlines: a session's first-list wait runs from its first wait;
// later waits get what is left, and nothing once it has run out.
func TestListDeadlines(t *testing.T) {
	var l Waits
	t0 := time.Unix(1000, 0)
	a, b := new(int), new(int)
	if d, first := l.Left(a, time.Second, t0); d != time.Second || !first {
		t.Errorf("a's initialize: %v left (first %v), want 1s (true)", d, first)
	}
	if d, first := l.Left(a, time.Second, t0.Add(300*time.Millisecond)); d != 700*time.Millisecond || first {
		t.Errorf("a's list 300ms later: %v left (first %v), want 700ms (false)", d, first)
	}
	if d, _ := l.Left(a, time.Second, t0.Add(2*time.Second)); d > 0 {
		t.Errorf("a's list 2s later: %v left, want none", d)
	}
	if d, first := l.Left(b, 20*time.Second, t0.Add(2*time.Second)); d != 20*time.Second || !first {
		t.Errorf("b, another session: %v left (first %v), want 20s (true)", d, first)
	}
	l.Forget(a)
	if d, first := l.Left(a, time.Second, t0.Add(3*time.Second)); d != time.Second || !first {
		t.Errorf("a after forget: %v left (first %v), want 1s (true)", d, first)
	}
}
