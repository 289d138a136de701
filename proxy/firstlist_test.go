package proxy

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
		{0, "", firstListWaitOther},
		{0, "inspector-client", firstListWaitOther},
		{3 * time.Second, "codex-mcp-client", 3 * time.Second},
		{3 * time.Second, "claude-code", 3 * time.Second},
	}
	for _, tt := range tests {
		s := &Server{opts: Options{FirstListWait: tt.set}}
		if got := s.firstListWait(tt.client); got != tt.want {
			t.Errorf("first_list_wait %v, client %q: waits %v, want %v", tt.set, tt.client, got, tt.want)
		}
	}
	if firstListWaitCodex >= time.Second {
		t.Errorf("Codex's wait %v is not under the second Codex gives a server", firstListWaitCodex)
	}
}
