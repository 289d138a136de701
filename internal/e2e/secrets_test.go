//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol: an upstream's log message is one of the channels a secret may leak through.

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Secrets of TestSecretsByReference, one per way into the config, each
// distinct and most with characters that percent-, JSON- or Go-quoting
// changes. The variables are set in the environment of every manifold the
// test runs.
var refSecrets = map[string]string{
	"E2E_REF_VAR":      "vS3cr3t<var>&ref",          // ${E2E_REF_VAR} in a server's env
	"E2E_REF_EXPLICIT": `xS3cr3t"explicit\env`,      // ${env:E2E_REF_EXPLICIT} in a server's env
	"E2E_REF_HDR":      "kS3cr3t-header-explicit",   // ${env:E2E_REF_HDR} in a remote server's header
	"E2E_REF_ANY":      "yS3cr3t expanded anywhere", // ${E2E_REF_ANY} in args, not a credential's place
}

const (
	refFileSecret    = "fS3cr3t/file+token=v"       // ${file:token.txt}: a server's env, relative to the config
	refHdrFileSecret = "hS3cr3t-header-from-file"   // ${file:/abs/...}: a remote server's Authorization header
	refArgSecret     = "aS3cr3t-literal-arg-token"  // written out after -token in args
	refCallSecret    = "cS3cr3t-in-call-arguments"  // what the client passes as a credential argument
	refRotated       = "rS3cr3t-rotated/file+token" // the new content of token.txt, picked up by reload
)

// allRefSecrets are the values that no output may show.
func allRefSecrets() []string {
	out := []string{refFileSecret, refHdrFileSecret, refArgSecret, refCallSecret, refRotated}
	for _, v := range refSecrets {
		out = append(out, v)
	}
	return out
}

// echoRemote serves, on a loopback port, a streamable HTTP MCP server whose
// tool "headers" and resource "remote://headers" echo the request headers
// it was sent (the credentials of Manifold's headers among them), in text,
// structured content and, with how = "rpc", a JSON-RPC error. It returns the
// server's URL.
func echoRemote(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	var last http.Header // guarded by mu: the headers of the latest request
	headers := func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range last {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(last[k], ", "))
		}
		return b.String()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote-echo", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "headers", Description: "Echoes the request headers.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h := headers()
			if strings.Contains(string(req.Params.Arguments), `"rpc"`) {
				return nil, &jsonrpc.Error{Code: -32001, Message: "refused; you sent " + h}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: h}}, StructuredContent: map[string]any{"headers": h}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "remote://headers", Name: "headers", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: headers()}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r.Header.Clone()
		mu.Unlock()
		h.ServeHTTP(w, r)
	})) + "/mcp"
}

// received returns the frames that a mcp.LoggingTransport wrote to frames
// as read by the client (not those it sent, which hold the secret the test
// passes as an argument).
func received(frames *syncBuffer) string {
	var b strings.Builder
	for l := range strings.Lines(frames.String()) {
		if strings.HasPrefix(l, "read: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// TestSecretsByReference sets secrets through every way into the config
// (${file:} relative and absolute, ${env:}, ${VAR}, a literal after a
// credential flag, a server's env, a remote server's headers), runs a
// fixture that echoes its command line and environment everywhere it can
// (tool text, structured content, isError, JSON-RPC errors, stderr, log and
// progress notifications, a resource, a prompt) and a remote server that
// echoes the headers it gets, and drives every command through the built
// binary: check, tools, call, status (fresh and running, text and JSON),
// explain, doctor, serve over stdio and HTTP with the audit log and
// arguments, across a reload that rotates a secret file. No output channel
// (stdout, stderr, the audit log, the status file, GET /status, the frames
// the client receives) shows any secret in any spelling, while the echoes
// arrive, masked.
func TestSecretsByReference(t *testing.T) {
	cache := secretEnv(t, refSecrets) // not parallel: Setenv
	remote := echoRemote(t)
	hdrFile := filepath.Join(t.TempDir(), "remote.token")
	if err := os.WriteFile(hdrFile, []byte(refHdrFileSecret+"\n"), 0o644); err != nil { // readable by others: check warns
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	// pin = "off": the one-shot commands (tools, call, status --fresh) each
	// list the servers and the lock file they leave is not what this test
	// is about (pin_test.go is).
	path := writeConfig(t, `pin = "off"

[audit]
file = `+tomlStr(audit)+`
arguments = true

[servers.remote]
url = `+tomlStr(remote)+`
headers = { Authorization = "Bearer ${file:`+hdrFile+`}", X-Api-Key = "${env:E2E_REF_HDR}" }
`+fixture("local", []string{"-leak", "-extra", "secrets", "-token", refArgSecret, "-instructions", "${E2E_REF_ANY}"},
		`env = { API_TOKEN = "${E2E_REF_VAR}", OTHER = "${env:E2E_REF_EXPLICIT}", FILE_TOKEN = "${file:token.txt}" }`))
	tokenFile := filepath.Join(filepath.Dir(path), "token.txt")
	if err := os.WriteFile(tokenFile, []byte(refFileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(t *testing.T, where, out string) {
		t.Helper()
		assertNoneOf(t, where, out, allRefSecrets())
	}

	t.Run("check", func(t *testing.T) {
		stdout, stderr, code := runCLI(t, "check", "--config", path)
		if code != 0 {
			t.Fatalf("check exited %d:\n%s%s", code, stdout, stderr)
		}
		for _, want := range []string{
			"servers.local.args holds a credential written out, and the file is readable by other users (mode 0644); run chmod 600 " + path,
			"servers.remote.headers.Authorization reads the secret file " + hdrFile + ", which is readable by other users (mode 0644); run chmod 600 " + hdrFile,
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("check does not warn %q:\n%s", want, stderr)
			}
		}
		none(t, "manifold check", stdout+"\n"+stderr)
	})

	t.Run("one-shot commands", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string // proves the output is about the servers, and the echo is masked
		}{
			{[]string{"tools"}, "local__secrets"},
			{[]string{"status", "--fresh"}, "remote"},
			{[]string{"status", "--fresh", "--json"}, `"remote"`},
			{[]string{"explain", "local__secrets"}, "local__secrets"},
			{[]string{"doctor"}, "local"},
			{[]string{"call", "local__secrets", `{"how":"text"}`}, "FILE_TOKEN=[redacted]"},
			{[]string{"call", "--json", "local__secrets", `{"how":"error"}`}, "OTHER=[redacted]"},
			{[]string{"call", "local__secrets", `{"how":"rpc"}`}, "API_TOKEN=[redacted]"},
			{[]string{"call", "remote__headers", `{}`}, "Authorization: [redacted]"},
		} {
			stdout, stderr, _ := runCLI(t, append([]string{tc.args[0], "--config", path}, tc.args[1:]...)...)
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("manifold %s does not show %q:\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), tc.want, stdout, stderr)
			}
			none(t, "manifold "+strings.Join(tc.args, " "), stdout+"\n"+stderr)
		}
	})

	// exercise calls, reads and gets, through cs, everything that echoes a
	// secret, and waits for the echoed notifications in frames.
	exercise := func(t *testing.T, cs *mcp.ClientSession, frames *syncBuffer) {
		t.Helper()
		ctx := testCtx(t)
		listTools(ctx, t, cs)
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
		for _, how := range []string{"text", "error", "notify"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__secrets",
				Arguments: map[string]any{"how": how, "api_key": refCallSecret, "note": "Bearer " + refCallSecret},
				Meta:      mcp.Meta{"progressToken": "p-" + how}})
			if err != nil {
				t.Fatalf("call local__secrets (%s): %v", how, err)
			}
			if got := text(res); !strings.Contains(got, "FILE_TOKEN=[redacted]") || !strings.Contains(got, "args ") {
				t.Errorf("local__secrets (%s) = %q, want the echo with FILE_TOKEN=[redacted]", how, got)
			}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__secrets", Arguments: map[string]any{"how": "rpc"}}); err == nil || !strings.Contains(err.Error(), "API_TOKEN=[redacted]") {
			t.Errorf("local__secrets (rpc): error %v, want the echo with API_TOKEN=[redacted]", err)
		}
		if got := text(call(ctx, t, cs, "remote__headers", map[string]any{})); !strings.Contains(got, "Authorization: [redacted]") || !strings.Contains(got, "X-Api-Key: [redacted]") {
			t.Errorf("remote__headers = %q, want the masked credentials", got)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "remote__headers", Arguments: map[string]any{"how": "rpc"}}); err == nil || !strings.Contains(err.Error(), "Authorization: [redacted]") {
			t.Errorf("remote__headers (rpc): error %v, want the masked credentials", err)
		}
		for _, uri := range []string{"local+fixture://local/secrets", "remote+remote://headers"} {
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, "[redacted]") {
				t.Errorf("read %s: %v, %v; want the masked echo", uri, rr, err)
			}
		}
		if pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "local__secrets"}); err != nil || len(pr.Messages) == 0 {
			t.Errorf("get local__secrets: %v, %v", pr, err)
		}
		// The log message arrives (it is the session's); a progress
		// notification may be dropped when it comes after its call ended,
		// so it is grepped when it came (TestUpstreamEchoMasked waits for it).
		waitFor(t, 20*time.Second, "the masked log notification in the client's frames", func() bool {
			return strings.Contains(frames.String(), "notifications/message")
		})
	}

	t.Run("serve stdio", func(t *testing.T) {
		frames := &syncBuffer{}
		p := &proc{t: t, stderr: &syncBuffer{}}
		p.cmd = command(manifoldBin, "serve", "--config", path)
		p.cmd.Stderr = p.stderr
		p.cmd.WaitDelay = 5 * time.Second
		t.Cleanup(p.logOnFailure)
		tr := &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 10 * time.Minute}, Writer: frames}
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil)
		cs, err := client.Connect(testCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, p.stderr)
		}
		sp := &stdioProxy{proc: p, cs: cs}
		t.Cleanup(func() { sp.stop() })
		exercise(t, cs, frames)
		ctx := testCtx(t)

		var file string
		waitFor(t, 20*time.Second, "the status file", func() bool {
			b, err := os.ReadFile(filepath.Join(cache, "manifold", "run", strconv.Itoa(sp.pid())+".json"))
			file = string(b)
			return err == nil && strings.Contains(file, "remote")
		})
		none(t, "the status file", file)
		for _, args := range [][]string{{"status"}, {"status", "--json"}, {"doctor"}} {
			stdout, stderr, _ := runCLI(t, append(args, "--config", path)...)
			if !strings.Contains(stdout, strconv.Itoa(sp.pid())) && args[0] == "status" {
				t.Errorf("manifold %s does not show the running instance:\n%s%s", strings.Join(args, " "), stdout, stderr)
			}
			none(t, "manifold "+strings.Join(args, " ")+" (running)", stdout+"\n"+stderr)
		}

		// Rotating the secret file alone reloads: the server whose env it
		// feeds restarts with the new value, which is masked as well.
		before := text(call(ctx, t, cs, "local__pid", nil))
		if err := os.WriteFile(tokenFile, []byte(refRotated+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the reload of the rotated secret file", func() bool {
			return strings.Contains(sp.stderr.String(), "lock or secret file changed")
		})
		waitFor(t, 30*time.Second, "local restarted with the rotated secret", func() bool {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "local__pid"})
			return err == nil && !res.IsError && text(res) != before
		})
		if got := text(call(ctx, t, cs, "local__secrets", map[string]any{"how": "text"})); !strings.Contains(got, "FILE_TOKEN=[redacted]") {
			t.Errorf("after the rotation local__secrets = %q, want FILE_TOKEN=[redacted]", got)
		}
		sp.stop()
		log := sp.stderr.String()
		if !strings.Contains(log, "API_TOKEN=[redacted]") { // the fixture's -leak lines
			t.Errorf("the fixture's leaked environment is not in the log:\n%s", log)
		}
		none(t, "serve (stdio) stderr", log)
		none(t, "the frames the stdio client received", received(frames))
		if !strings.Contains(frames.String(), "[redacted]") {
			t.Errorf("the client never saw a masked echo:\n%s", frames)
		}
		b, err := os.ReadFile(audit)
		if err != nil || !strings.Contains(string(b), `"arguments"`) {
			t.Fatalf("the audit log %s: %v\n%s", audit, err, b)
		}
		none(t, "the audit log (stdio)", string(b))
	})

	t.Run("serve http", func(t *testing.T) {
		if err := os.WriteFile(tokenFile, []byte(refFileSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		hp := startHTTP(t, path)
		frames := &syncBuffer{}
		tr := &mcp.LoggingTransport{Transport: &mcp.StreamableClientTransport{Endpoint: hp.endpoint(), HTTPClient: &http.Client{Timeout: testTimeout}}, Writer: frames}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "0"}, nil).Connect(testCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			t.Fatalf("connect over HTTP: %v", err)
		}
		exercise(t, cs, frames)
		ctx := testCtx(t)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hp.addr+"/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /status: %v", err)
		}
		status, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.Contains(string(status), "remote") {
			t.Errorf("GET /status: %v\n%s", err, status)
		}
		none(t, "GET /status", string(status))
		stdout, stderr, _ := runCLI(t, "status", "--url", "http://"+hp.addr)
		none(t, "manifold status --url", stdout+"\n"+stderr)
		_ = cs.Close()
		hp.stop(func() {
			_ = syscall.Kill(hp.pid(), syscall.SIGTERM)
			<-hp.exited
		})
		none(t, "serve (http) stderr", hp.stderr.String())
		none(t, "the frames the HTTP client received", received(frames))
		b, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		none(t, "the audit log (http)", string(b))
	})
}
