package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 11, the downstream face: go-sdk clients of both eras against the
// built binary, over stdio and HTTP.

const modernVersion = "2026-07-28"

// eraDownCases are the two eras a client may speak, and whether its session
// must come out modern.
var eraDownCases = []struct {
	name, version string
	modern        bool
}{
	{"2026-07-28 (server/discover)", modernVersion, true},
	{"2025-11-25 (initialize)", "2025-11-25", false},
}

// checkEraSession lists and calls through cs, and checks that the session
// speaks the era it asked for.
func checkEraSession(t *testing.T, cs *mcp.ClientSession, modern bool) {
	t.Helper()
	ctx := testCtx(t)
	ir := cs.InitializeResult()
	if got := ir.ProtocolVersion >= modernVersion; got != modern {
		t.Fatalf("negotiated %q; want modern = %v", ir.ProtocolVersion, modern)
	}
	if ir.ServerInfo == nil || ir.ServerInfo.Name != "manifold" {
		t.Errorf("serverInfo = %+v, want manifold", ir.ServerInfo)
	}
	tools := listTools(ctx, t, cs)
	for _, server := range []string{"alpha", "beta"} {
		name := server + "__echo"
		if tools[name] == nil {
			t.Errorf("%s not listed; listed: %v", name, toolNames(tools))
			continue
		}
		if got, want := text(call(ctx, t, cs, name, map[string]any{"message": "era"})), server+": era"; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if modern && (res.TTLMs <= 0 || res.CacheScope != "public") {
		t.Errorf("modern tools/list: ttlMs %d, cacheScope %q; want a positive TTL, public", res.TTLMs, res.CacheScope)
	}
	if !modern && (res.TTLMs != 0 || res.CacheScope != "") {
		t.Errorf("legacy tools/list: ttlMs %d, cacheScope %q; want neither (2026-07-28 fields)", res.TTLMs, res.CacheScope)
	}
}

func TestEraDownStdio(t *testing.T) {
	t.Parallel()
	for _, tc := range eraDownCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-era", Version: "0"}, nil)
			sp := startStdioClient(t, writeConfig(t, twoFixtures()), client, tc.version)
			checkEraSession(t, sp.cs, tc.modern)
		})
	}
}

func TestEraDownHTTP(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, twoFixtures()))
	for _, tc := range eraDownCases {
		t.Run(tc.name, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-era", Version: "0"}, nil)
			cs := connectHTTPClient(t, hp, client, tc.version)
			checkEraSession(t, cs, tc.modern)
		})
	}
	// With isolation = "session" a modern request has no session to give a
	// process of its own: it is served by the shared process.
	t.Run("isolation = session", func(t *testing.T) {
		hp := startHTTP(t, writeConfig(t, `call_timeout = "20s"`+"\n"+fixture("alpha", nil, `isolation = "session"`)+fixture("beta", nil, `isolation = "session"`)))
		for _, tc := range eraDownCases {
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-era", Version: "0"}, nil)
			checkEraSession(t, connectHTTPClient(t, hp, client, tc.version), tc.modern)
		}
	})
}

// TestEraDownListen: a modern client's subscriptions/listen gets list_changed
// (a server added by a config reload) and resources/updated (a subscribed
// resource touched upstream), over HTTP and over stdio.
func TestEraDownListen(t *testing.T) {
	t.Parallel()
	const uri = "alpha+fixture://alpha/readme.txt"
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, fixture("alpha", []string{"-extra", "touch"}))
			changed := make(chan struct{}, 16)
			updated := make(chan string, 16)
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-listen", Version: "0"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
				ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
					select {
					case updated <- r.Params.URI:
					default:
					}
				},
			})
			var cs *mcp.ClientSession
			if transport == "http" {
				cs = connectHTTPClient(t, startHTTP(t, path), client, modernVersion)
			} else {
				cs = startStdioClient(t, path, client, modernVersion).cs
			}
			ctx := testCtx(t)
			if v := cs.InitializeResult().ProtocolVersion; v != modernVersion {
				t.Fatalf("negotiated %q, want %s", v, modernVersion)
			}
			waitTool(ctx, t, cs, "alpha__touch")
			for len(changed) > 0 {
				<-changed
			}

			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			// The listen that carries the subscription is opened in the
			// background: touch until the update arrives.
			deadline := time.After(20 * time.Second)
		touch:
			for {
				call(ctx, t, cs, "alpha__touch", nil)
				select {
				case got := <-updated:
					if got != uri {
						t.Errorf("resources/updated for %q, want %q", got, uri)
					}
					break touch
				case <-time.After(200 * time.Millisecond):
				case <-deadline:
					t.Fatal("no resources/updated within 20s of subscribing")
				}
			}

			if err := os.WriteFile(path, []byte(fixture("alpha", []string{"-extra", "touch"})+fixture("beta", nil)), 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-time.After(20 * time.Second):
				t.Fatal("no tools/list_changed within 20s of a server being added")
			}
			waitTool(ctx, t, cs, "beta__echo")
		})
	}
}

// modernBody is a 2026-07-28 request body.
func modernBody(id int, method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}`
	if params != "" {
		meta = params + "," + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, method, meta)
}

// eraPost posts body to hp's /mcp with headers and returns the status and
// the JSON-RPC message of the answer (from a JSON body or the first SSE
// data line).
func eraPost(ctx context.Context, t *testing.T, hp *httpProxy, headers map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hp.endpoint(), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(l, "data: "); ok {
				text = rest
				break
			}
		}
	}
	var msg map[string]any
	_ = json.Unmarshal([]byte(text), &msg)
	if msg == nil {
		msg = map[string]any{"raw": text}
	}
	return resp.StatusCode, msg
}

func errCode(msg map[string]any) float64 {
	e, _ := msg["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestEraDownHTTPAttacks: what a 2026-07-28 request over HTTP may get wrong
// is refused with the protocol's error, and never reaches a session of the
// initialize era.
func TestEraDownHTTPAttacks(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, twoFixtures()))
	ctx := testCtx(t)
	modern := func(method, name string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}
	echo := `"name":"alpha__echo","arguments":{"message":"m"}`
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    float64
	}{
		{"a good call", modern("tools/call", "alpha__echo"), modernBody(1, "tools/call", echo), 200, 0},
		{"Mcp-Method disagrees with the body", modern("tools/list", ""), modernBody(1, "tools/call", echo), 400, -32020},
		{"Mcp-Name disagrees with the body", modern("tools/call", "beta__echo"), modernBody(1, "tools/call", echo), 400, -32020},
		{"no Mcp-Method", map[string]string{"Mcp-Protocol-Version": modernVersion}, modernBody(1, "tools/list", ""), 400, -32020},
		{"version header disagrees with _meta", map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, modernBody(1, "tools/list", ""), 400, -32020},
		{"modern _meta without the version header", map[string]string{"Mcp-Method": "tools/list"}, modernBody(1, "tools/list", ""), 400, -32020},
		{"modern header, body without _meta", modern("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, 400, -32602},
		{"a version not served", map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"},
			strings.Replace(modernBody(1, "tools/list", ""), "2026-07-28", "2099-01-01", 1), 400, -32022},
		{"bogus _meta", modern("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"x"}}}`, 400, -32602},
		{"ping", modern("ping", ""), modernBody(1, "ping", ""), 404, -32601},
		{"logging/setLevel", modern("logging/setLevel", ""), modernBody(1, "logging/setLevel", `"level":"debug"`), 404, -32601},
		{"initialize as a modern request", modern("initialize", ""), modernBody(1, "initialize", `"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"x","version":"0"}`), 404, -32601},
		{"unknown resource", modern("resources/read", "nope://x"), modernBody(1, "resources/read", `"uri":"nope://x"`), 400, -32602},
		{"oversized _meta", modern("tools/list", ""), strings.Replace(modernBody(1, "tools/list", ""), `"name":"raw"`, `"name":"`+strings.Repeat("x", 5<<20)+`"`, 1), 413, -32600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := eraPost(ctx, t, hp, tc.headers, tc.body)
			if status != tc.status || errCode(msg) != tc.code {
				t.Errorf("status %d, error code %v; want %d, %v; answer %.300v", status, errCode(msg), tc.status, tc.code, msg)
			}
		})
	}

	t.Run("a modern GET", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hp.endpoint(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", modernVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("GET at 2026-07-28: status %d, Allow %q; want 405, POST (there is no stream to open)", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})

	t.Run("a modern request with a legacy session's id", func(t *testing.T) {
		cs := connectHTTP(t, hp) // legacy (2025-11-25), stateful
		h := modern("tools/call", "alpha__echo")
		h["Mcp-Session-Id"] = cs.ID()
		status, msg := eraPost(ctx, t, hp, h, modernBody(1, "tools/call", echo))
		if errCode(msg) != -32022 {
			t.Errorf("status %d, answer %.300v; want -32022 (a session speaks the initialize era only)", status, msg)
		}
		// The legacy session is unharmed.
		if got := text(call(ctx, t, cs, "alpha__echo", map[string]any{"message": "still"})); got != "alpha: still" {
			t.Errorf("the legacy session after the modern request: %q", got)
		}
	})
}

// TestEraDownListenFlood: subscriptions/listen streams over HTTP are capped
// (http.max_sessions); beyond it a listen is refused with 503, other modern
// requests are still served, and a closed stream frees its slot.
func TestEraDownListenFlood(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, twoFixtures()+"\n[http]\nmax_sessions = 2\n"))
	ctx := testCtx(t)
	listen := modernBody(7, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)
	open := func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hp.endpoint(), strings.NewReader(listen))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", modernVersion)
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		return http.DefaultClient.Do(req)
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range 2 {
		lctx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		resp, err := open(lctx)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d: status %d", i, resp.StatusCode)
		}
		// The acknowledgement shows the stream is open.
		buf := make([]byte, 512)
		if n, _ := resp.Body.Read(buf); !strings.Contains(string(buf[:n]), "subscriptions/acknowledged") {
			t.Fatalf("listen %d: no acknowledgement, got %q", i, buf[:n])
		}
	}
	for range 5 {
		resp, err := open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "http.max_sessions") {
			t.Fatalf("listen beyond the cap: status %d, body %s; want 503 naming http.max_sessions", resp.StatusCode, body)
		}
	}
	status, msg := eraPost(ctx, t, hp, map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": "tools/list"}, modernBody(1, "tools/list", ""))
	if status != http.StatusOK || msg["result"] == nil {
		t.Errorf("tools/list during the flood: status %d, %.200v", status, msg)
	}
	cancels[0]()
	waitFor(t, 10*time.Second, "a listen slot freed", func() bool {
		resp, err := open(ctx)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
