//go:build linux

package plugins_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/upstream"
)

// pluginServer is what cmd/manifold makes of a [plugins.NAME] table.
func pluginServer(name, command string, log *slog.Logger) proxy.ServerConfig {
	h := plugins.NewHost(plugins.Options{Name: name, Command: command, Logger: log})
	return proxy.ServerConfig{
		Upstream: upstream.Options{Name: name, Dial: h.Dial, StartupTimeout: 30 * time.Second},
		Prefix:   name,
	}
}

// TestThroughProxy serves two plugins through an in-process proxy and a
// client on its stdio path: their tools are listed and called like any
// server's, and closing the proxy stops the plugin processes.
func TestThroughProxy(t *testing.T) {
	log, logs := newLogger()
	p, err := proxy.New(proxy.Options{
		Servers: []proxy.ServerConfig{
			pluginServer("iban", ibanPlugin, log),
			pluginServer("test", testPlugin, log),
		},
		Logger: log,
		// The first list holds both plugins however loaded the machine is
		// (with the 300ms default, a plugin that starts slowly is listed
		// later, after list_changed).
		FirstListWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs)
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = p.Close()
		}
	}()

	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- p.ServeStdio(ctx, pr, pw)
		pw.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var iban *mcp.Tool
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "iban__iban_check" {
			iban = tool
		}
	}
	for _, want := range []string{"iban__iban_check", "test__reverse", "test__pid"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if iban == nil {
		t.Fatal("no iban__iban_check")
	}
	wantAnn := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	if diff := cmp.Diff(wantAnn, iban.Annotations); diff != "" {
		t.Errorf("iban_check annotations (-want +got):\n%s", diff)
	}
	if iban.OutputSchema == nil {
		t.Error("iban_check has no output schema")
	}

	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "iban__iban_check", Arguments: map[string]any{
		"ibans": "DE89 3704 0044 0532 0130 00, GB82 WEST 1234 5698 7654 32",
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Results []struct {
			IBAN    string `json:"iban"`
			Valid   bool   `json:"valid"`
			Country string `json:"country"`
			Grouped string `json:"grouped"`
		} `json:"results"`
		Valid, Invalid int
	}
	b, _ := json.Marshal(got.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	if got.IsError || out.Valid != 2 || out.Invalid != 0 || len(out.Results) != 2 ||
		out.Results[0].IBAN != "DE89370400440532013000" || out.Results[1].Grouped != "GB82 WEST 1234 5698 7654 32" {
		t.Errorf("iban__iban_check = %s (isError %v)", b, got.IsError)
	}
	if txt := text(got); !strings.HasPrefix(txt, "2 IBANs checked: 2 valid, 0 invalid.") {
		t.Errorf("iban__iban_check text = %q", txt)
	}

	if got := text(call(t, cs, "test__reverse", map[string]any{"text": "proxy"})); got != `{"text":"yxorp"}` {
		t.Errorf("test__reverse = %q", got)
	}
	pid := pidOf(t, cs, "test__pid")
	// manifold status reports the plugin's real pid, as for any child.
	for _, st := range p.Status() {
		if st.Name == "test" && st.PID != pid {
			t.Errorf("status of plugin test: pid %d, want %d (the process the plugin runs in)", st.PID, pid)
		}
	}

	_ = cs.Close()
	if err := p.Close(); err != nil {
		t.Errorf("proxy Close: %v", err)
	}
	closed = true
	<-served
	// The proxy's Close waits for its upstreams, and a plugin's connection
	// waits for its process: it is gone.
	if alive(pid) {
		t.Errorf("plugin %d alive after the proxy was closed", pid)
	}
}
