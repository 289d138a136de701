package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacySessionWithoutCacheFields: a go-sdk client at 2025-11-25, over
// stdio and over HTTP, gets every list and read without the 2026-07-28
// cache fields ttlMs and cacheScope, which its version does not have.
func TestLegacySessionWithoutCacheFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fixture("fx", []string{"-files", dir}))
	exercise := func(t *testing.T, tr mcp.Transport, frames *syncBuffer) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).Connect(testCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		ctx := testCtx(t)
		// Twice: the second list of a view is answered from prepared bytes
		// (the lean path, once the servers' first start is over).
		for range 2 {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cs.ListPrompts(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListResourceTemplates(ctx, nil); err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		read := ""
		for _, r := range res.Resources {
			if strings.HasSuffix(r.URI, "/a.txt") {
				read = r.URI
			}
		}
		if read == "" {
			t.Fatalf("no a.txt among the resources %+v", res.Resources)
		}
		if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: read}); err != nil || len(rr.Contents) != 1 {
			t.Fatalf("read %s: %v", read, err)
		}
		got := received(frames)
		for _, method := range []string{`"tools":[`, `"prompts":[`, `"resourceTemplates":[`, `"resources":[`, `"contents":[`} {
			if !strings.Contains(got, method) {
				t.Errorf("no answer with %s among the frames received:\n%s", method, got)
			}
		}
		for _, field := range []string{`"ttlMs"`, `"cacheScope"`} {
			if strings.Contains(got, field) {
				t.Errorf("a 2025-11-25 session received %s:\n%s", field, got)
			}
		}
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		frames := &syncBuffer{}
		p := &proc{t: t, stderr: &syncBuffer{}}
		p.cmd = command(manifoldBin, "serve", "--config", cfg)
		p.cmd.Stderr = p.stderr
		p.cmd.WaitDelay = 5 * time.Second
		t.Cleanup(p.logOnFailure)
		exercise(t, &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 10 * time.Minute}, Writer: frames}, frames)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		hp := startHTTP(t, cfg)
		frames := &syncBuffer{}
		exercise(t, &mcp.LoggingTransport{Transport: &mcp.StreamableClientTransport{Endpoint: hp.endpoint(), HTTPClient: &http.Client{Timeout: testTimeout}}, Writer: frames}, frames)
	})
}
