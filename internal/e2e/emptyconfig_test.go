package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestServeEmptyConfigWarns: a config with nothing to serve (here every
// server disabled; an empty file is the same) still serves, and says on
// stderr that it serves nothing and how to add a server.
func TestServeEmptyConfigWarns(t *testing.T) {
	t.Parallel()
	r := startRaw(t, writeConfig(t, fixture("alpha", nil, "disabled = true")))
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`)
	r.await(t, "1")
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if list := string(r.await(t, "2").Result); !strings.Contains(list, `"tools":[]`) {
		t.Errorf("tools/list = %.300s, want no tools", list)
	}
	waitFor(t, 10*time.Second, "the warning that there is nothing to serve", func() bool {
		s := r.stderr.String()
		return strings.Contains(s, "lists no server and no plugin that is enabled") && strings.Contains(s, "[servers.NAME]")
	})
}
