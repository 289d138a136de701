//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, and bridging them between the eras is what these tests check.

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The four bridges between the protocol eras (README "Bridges: what is
// translated, and the limits"), with go-sdk clients pinned to each era.

// bridgeClient is a go-sdk client that answers sampling, elicitation and
// roots and records what it was asked and the progress it got.
type bridgeClient struct {
	name string
	hold chan struct{} // if set, an elicitation waits for it (or its request's end) and reports there

	mu       sync.Mutex
	elicits  []mcp.ElicitParams               // guarded by mu
	samples  []mcp.CreateMessageParams        // guarded by mu
	progress []mcp.ProgressNotificationParams // guarded by mu
	more     chan struct{}
}

// client returns the SDK client; mrtr false disables its automatic answering
// of input_required results, so that the test sees them raw.
func (bc *bridgeClient) client(mrtr bool, caps *mcp.ClientCapabilities) *mcp.Client {
	bc.more = make(chan struct{}, 1)
	opts := &mcp.ClientOptions{
		Capabilities: caps,
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			bc.record(func() { bc.progress = append(bc.progress, *req.Params) })
		},
	}
	// A handler declares its capability: set only those caps declare.
	if caps.Sampling != nil {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			bc.record(func() { bc.samples = append(bc.samples, *req.Params) })
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: "sampled by " + bc.name}}, nil
		}
	}
	if caps.Elicitation != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			bc.record(func() { bc.elicits = append(bc.elicits, *req.Params) })
			if bc.hold != nil {
				bc.hold <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": fmt.Sprintf("%s %d", bc.name, bc.count())}}, nil
		}
	}
	if !mrtr {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: bc.name, Version: "1"}, opts)
	c.AddRoots(&mcp.Root{URI: "file:///tmp/bridge-root", Name: "root"})
	return c
}

func (bc *bridgeClient) record(f func()) {
	bc.mu.Lock()
	f()
	bc.mu.Unlock()
	select {
	case bc.more <- struct{}{}:
	default:
	}
}

func (bc *bridgeClient) count() int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return len(bc.elicits)
}

// allCaps declares sampling, form and URL elicitation, and roots.
func allCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
	}
}

// bridgeConfig is a legacy fixture server "alpha" with the bridge tools,
// whose process serves one client (roots are relayed only then).
// The audit log goes to audit.jsonl beside the config.
func bridgeConfig(t *testing.T) string {
	t.Helper()
	return writeConfig(t, "[audit]\nfile = \"audit.jsonl\"\n"+
		fixture("alpha", []string{"-tools", "echo", "-extra", "interview,fanout,elicit,sample,roots"}, `isolation = "session"`))
}

// auditRounds returns the outcome and input rounds of each audit line of
// exposed, in order.
func auditRounds(cfg, exposed string) []string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(cfg), "audit.jsonl"))
	var out []string
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Exposed string `json:"exposed"`
			Outcome string `json:"outcome"`
			Rounds  int    `json:"input_rounds"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Exposed == exposed {
			out = append(out, fmt.Sprintf("%s/%d", rec.Outcome, rec.Rounds))
		}
	}
	return out
}

// progressAcrossRounds calls alpha__interview with a progress token, for a
// round of input between two progress notifications, and checks that both
// reach the client with its own token.
func progressAcrossRounds(ctx context.Context, t *testing.T, cs *mcp.ClientSession, bc *bridgeClient) {
	t.Helper()
	bc.mu.Lock()
	bc.progress = nil
	bc.mu.Unlock()
	res, err := callRaw(ctx, cs, "alpha__interview", map[string]any{"steps": "progress,elicit,progress"}, mcp.Meta{"progressToken": "bridge-tok"})
	if err != nil || res.IsError {
		t.Fatalf("alpha__interview: %v %v", err, res)
	}
	deadline := time.Now().Add(awaitBound)
	for {
		bc.mu.Lock()
		got := append([]mcp.ProgressNotificationParams(nil), bc.progress...)
		bc.mu.Unlock()
		if len(got) == 2 {
			for _, p := range got {
				if p.ProgressToken != "bridge-tok" {
					t.Errorf("progress token = %v, want the client's own", p.ProgressToken)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress notifications = %+v, want 2 (one before and one after the round of input)", got)
		}
		select {
		case <-bc.more:
		case <-time.After(pollEvery):
		}
	}
}

func callRaw(ctx context.Context, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
}

// Cell 3 with a real client: a modern client's automatic answering of
// input_required results drives a legacy server's elicitation, sampling and
// roots requests, over several rounds, through Manifold over stdio.
func TestBridgeModernClientLegacyServerAuto(t *testing.T) {
	t.Parallel()
	bc := &bridgeClient{name: "modern"}
	sp := startStdioClient(t, bridgeConfig(t), bc.client(true, allCaps()), "")
	ctx := testCtx(t)
	if v := sp.cs.InitializeResult().ProtocolVersion; v != modernVersion {
		t.Fatalf("the client negotiated %q, want %q", v, modernVersion)
	}
	waitTool(ctx, t, sp.cs, "alpha__interview")

	t.Run("rounds", func(t *testing.T) {
		res, err := callRaw(ctx, sp.cs, "alpha__interview", map[string]any{"steps": "elicit,sample,roots,url"}, nil)
		if err != nil {
			t.Fatalf("alpha__interview: %v", err)
		}
		want := "alpha: interview\n" +
			`elicit action=accept content={"answer":"modern 1"}` + "\n" +
			`sample model=e2e-model text=sampled by modern` + "\n" +
			"roots file:///tmp/bridge-root\n" +
			"url action=accept"
		if got := text(res); got != want || res.IsError {
			t.Errorf("alpha__interview = %q (isError %v), want %q", got, res.IsError, want)
		}
		bc.mu.Lock()
		defer bc.mu.Unlock()
		if len(bc.elicits) != 2 || bc.elicits[0].Message != "[alpha] question 1" || bc.elicits[1].Mode != "url" || bc.elicits[1].Message != "[alpha] open this" {
			t.Errorf("elicitations seen by the client = %+v, want [alpha] question 1, then the URL one", bc.elicits)
		}
		if len(bc.samples) != 1 || bc.samples[0].IncludeContext == "thisServer" {
			t.Errorf("sampling requests seen by the client = %+v, want one with includeContext reduced", bc.samples)
		}
	})

	t.Run("concurrent requests", func(t *testing.T) {
		res, err := callRaw(ctx, sp.cs, "alpha__fanout", map[string]any{"n": 3}, nil)
		if err != nil {
			t.Fatalf("alpha__fanout: %v", err)
		}
		got := text(res)
		for i := 1; i <= 3; i++ {
			if !strings.Contains(got, fmt.Sprintf("%d:accept:modern", i)) {
				t.Errorf("alpha__fanout = %q (isError %v), want answer %d accepted", got, res.IsError, i)
			}
		}
	})

	t.Run("progress across rounds", func(t *testing.T) {
		progressAcrossRounds(ctx, t, sp.cs, bc)
	})

	t.Run("missing capability", func(t *testing.T) {
		// This request declares no sampling (per request: _meta).
		meta := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}}}
		res, err := callRaw(ctx, sp.cs, "alpha__sample", map[string]any{"prompt": "hi"}, meta)
		if err != nil {
			t.Fatalf("alpha__sample: %v", err)
		}
		if got := text(res); !res.IsError || !strings.Contains(got, `needs the client capability "sampling", which this client did not declare`) {
			t.Errorf("alpha__sample without sampling = %q (isError %v), want the upstream's error naming the missing capability", got, res.IsError)
		}
	})

	t.Run("no capability", func(t *testing.T) {
		// This request declares none of sampling, elicitation and roots:
		// its call is not parked (mrtr.go: noInputKey), and each question
		// of the server is refused as a parked call refuses it.
		meta := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{}}
		before := bc.count()
		for _, tc := range []struct {
			tool    string
			args    map[string]any
			capName string
		}{
			{"alpha__sample", map[string]any{"prompt": "hi"}, "sampling"},
			{"alpha__elicit", map[string]any{"message": "why?"}, "elicitation"},
			{"alpha__roots", map[string]any{}, "roots"},
		} {
			// The server's answer: a tool error, or (roots) a protocol error.
			var got string
			res, err := callRaw(ctx, sp.cs, tc.tool, tc.args, meta)
			switch {
			case err != nil:
				got = err.Error()
			case res.IsError:
				got = text(res)
			}
			if want := fmt.Sprintf("from \"alpha\" needs the client capability %q, which this client did not declare", tc.capName); !strings.Contains(got, want) {
				t.Errorf("%s without capabilities = %q, %v, want the server's error naming %q", tc.tool, got, res, tc.capName)
			}
		}
		if n := bc.count() - before; n != 0 {
			t.Errorf("the client was asked %d times, want 0", n)
		}
	})
}

// Cell 3 raw: the client sees the input_required result, answers it with a
// retry, and the state is one-use, bound and tamper-proof.
func TestBridgeModernClientLegacyServerRaw(t *testing.T) {
	t.Parallel()
	bc := &bridgeClient{name: "raw"}
	cfg := bridgeConfig(t)
	sp := startStdioClient(t, cfg, bc.client(false, allCaps()), "")
	ctx := testCtx(t)
	waitTool(ctx, t, sp.cs, "alpha__elicit")

	first := func(t *testing.T) *mcp.CallToolResult {
		t.Helper()
		res, err := callRaw(ctx, sp.cs, "alpha__elicit", map[string]any{"message": "why?"}, nil)
		if err != nil {
			t.Fatalf("alpha__elicit: %v", err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("alpha__elicit = %+v, want an input_required result with one input request and a requestState", res)
		}
		return res
	}
	retry := func(res *mcp.CallToolResult, state string) (*mcp.CallToolResult, error) {
		answers := mcp.InputResponseMap{}
		for k := range res.InputRequests {
			answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42"}}
		}
		return sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__elicit", Arguments: map[string]any{"message": "why?"}, InputResponses: answers, RequestState: state})
	}
	wantInvalid := func(t *testing.T, what string, err error, contains string) {
		t.Helper()
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, contains) {
			t.Errorf("%s: got %v, want -32602 saying %q", what, err, contains)
		}
	}

	t.Run("answer and replay", func(t *testing.T) {
		res := first(t)
		for _, ir := range res.InputRequests {
			if p, ok := ir.(*mcp.ElicitParams); !ok || p.Message != "[alpha] why?" {
				t.Errorf("input request = %#v, want an elicitation with the message %q", ir, "[alpha] why?")
			}
		}
		final, err := retry(res, res.RequestState)
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		if got := text(final); final.NeedsInput() || !strings.Contains(got, `alpha: elicit action=accept content={"answer":"42"}`) {
			t.Errorf("retry = %q (needs input %v), want the upstream's result with the answer", got, final.NeedsInput())
		}
		_, err = retry(res, res.RequestState)
		wantInvalid(t, "replayed state", err, "no longer waiting")
	})

	t.Run("tampered", func(t *testing.T) {
		res := first(t)
		st := []byte(res.RequestState)
		st[len(st)/2] ^= 1
		_, err := retry(res, string(st))
		wantInvalid(t, "tampered state", err, "altered")
		_, err = retry(res, "not-a-state")
		wantInvalid(t, "foreign state", err, "not one this proxy issued")
		// The call still waits for its real state.
		final, err := retry(res, res.RequestState)
		if err != nil || !strings.Contains(text(final), `"answer":"42"`) {
			t.Errorf("retry with the real state after refused ones = %v, %v", final, err)
		}
	})

	t.Run("another tool", func(t *testing.T) {
		res := first(t)
		_, err := sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": "x"}, RequestState: res.RequestState})
		wantInvalid(t, "state sent to another tool", err, "belongs to another request")
		if final, err := retry(res, res.RequestState); err != nil || final.NeedsInput() {
			t.Errorf("retry = %v, %v", final, err)
		}
	})

	t.Run("audit records one call with its rounds", func(t *testing.T) {
		eventually(ctx, t, func() string {
			got, want := auditRounds(cfg, "alpha__elicit"), []string{"ok/1", "ok/1", "ok/1"}
			if diff := cmp.Diff(want, got); diff != "" {
				return "audit lines of alpha__elicit (outcome/input_rounds), one per call (-want +got):\n" + diff
			}
			return ""
		})
	})
}

// A cancelled retry cancels the upstream call.
func TestBridgeCancelAcrossRounds(t *testing.T) {
	t.Parallel()
	bc := &bridgeClient{name: "cancel"}
	cfg := bridgeConfig(t)
	sp := startStdioClient(t, cfg, bc.client(false, allCaps()), "")
	ctx := testCtx(t)
	waitTool(ctx, t, sp.cs, "alpha__interview")
	args := map[string]any{"steps": "elicit,wait"}
	res, err := callRaw(ctx, sp.cs, "alpha__interview", args, nil)
	if err != nil || !res.NeedsInput() {
		t.Fatalf("alpha__interview = %+v, %v; want input_required", res, err)
	}
	answers := mcp.InputResponseMap{}
	for k := range res.InputRequests {
		answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "a"}}
	}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = sp.cs.CallTool(rctx, &mcp.CallToolParams{Name: "alpha__interview", Arguments: args, InputResponses: answers, RequestState: res.RequestState})
	if err == nil {
		t.Fatal("the retry of a call that waits forever returned")
	}
	// The upstream call ended, cancelled, after its one round of input.
	eventually(ctx, t, func() string {
		if got := auditRounds(cfg, "alpha__interview"); len(got) != 1 || got[0] != "cancelled/1" {
			return fmt.Sprintf("audit of alpha__interview (outcome/input_rounds) = %v, want [cancelled/1]", got)
		}
		return ""
	})
}

// modernConfig is a modern-only fixture server "beta" (it refuses
// initialize) with the multi-round-trip tool ask, beside the legacy "alpha".
func modernConfig(t *testing.T, extra ...string) string {
	t.Helper()
	return writeConfig(t, "[audit]\nfile = \"audit.jsonl\"\n"+strings.Join(extra, "\n")+"\n"+
		fixture("alpha", []string{"-tools", "echo", "-extra", "elicit"}, `isolation = "session"`)+
		fixture("beta", []string{"-era", "modern", "-tools", "echo", "-extra", "ask"}, `isolation = "session"`))
}

const askAll = "elicit,sample,roots,url"

func wantAskAll(client string) string {
	return "beta: ask\n" +
		`elicit action=accept content={"answer":"` + client + ` 1"}` + "\n" +
		"sample model=e2e-model text=sampled by " + client + "\n" +
		"roots file:///tmp/bridge-root\n" +
		"elicit action=accept"
}

// Cell 4: a legacy client calls a modern server that asks for input in
// rounds; Manifold asks the client for real and calls again with the
// answers, over stdio and HTTP.
func TestBridgeLegacyClientModernServer(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			bc := &bridgeClient{name: "legacy-" + transport}
			cfg := modernConfig(t)
			var cs *mcp.ClientSession
			if transport == "stdio" {
				cs = startStdioClient(t, cfg, bc.client(true, allCaps()), protocolVersion).cs
			} else {
				cs = connectHTTPClient(t, startHTTP(t, cfg), bc.client(true, allCaps()), protocolVersion)
			}
			ctx := testCtx(t)
			waitTool(ctx, t, cs, "beta__ask")

			res, err := callRaw(ctx, cs, "beta__ask", map[string]any{"steps": askAll}, nil)
			if err != nil {
				t.Fatalf("beta__ask: %v", err)
			}
			if got, want := text(res), wantAskAll(bc.name); got != want || res.IsError {
				t.Errorf("beta__ask = %q (isError %v), want %q", got, res.IsError, want)
			}
			bc.mu.Lock()
			if len(bc.elicits) != 2 || bc.elicits[0].Message != "[beta] question 1" || bc.elicits[1].Message != "[beta] open this" || bc.elicits[1].Mode != "url" {
				t.Errorf("elicitations seen by the client = %+v, want [beta] question 1, then the URL one", bc.elicits)
			}
			if len(bc.samples) != 1 || bc.samples[0].IncludeContext != "none" {
				t.Errorf("sampling requests seen by the client = %+v, want one with includeContext none", bc.samples)
			}
			bc.progress = nil
			bc.mu.Unlock()
			if got := auditRounds(cfg, "beta__ask"); len(got) != 1 || got[0] != "ok/4" {
				t.Errorf("audit of beta__ask (outcome/input_rounds) = %v, want [ok/4]", got)
			}

			// Progress in any round reaches the client's token.
			res, err = callRaw(ctx, cs, "beta__ask", map[string]any{"steps": "progress,elicit,progress"}, mcp.Meta{"progressToken": "legacy-tok"})
			if err != nil || res.IsError {
				t.Fatalf("beta__ask with progress: %v %v", err, res)
			}
			awaitProgress(ctx, t, bc, "legacy-tok", 2)
		})
	}
}

// awaitProgress waits for n progress notifications, each with token.
func awaitProgress(ctx context.Context, t *testing.T, bc *bridgeClient, token any, n int) {
	t.Helper()
	deadline := time.Now().Add(awaitBound)
	for {
		bc.mu.Lock()
		got := append([]mcp.ProgressNotificationParams(nil), bc.progress...)
		bc.mu.Unlock()
		if len(got) >= n {
			for _, p := range got {
				if p.ProgressToken != token {
					t.Errorf("progress token = %v, want the client's own %v", p.ProgressToken, token)
				}
			}
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("progress notifications = %+v, want %d (in several rounds)", got, n)
		}
		select {
		case <-bc.more:
		case <-time.After(pollEvery):
		}
	}
}

// Cell 4's bounds: the loop stops at max_input_rounds with an error the
// model can act on, and a capability the client lacks is -32021 naming it.
func TestBridgeLegacyClientModernServerRefusals(t *testing.T) {
	t.Parallel()
	bc := &bridgeClient{name: "legacy"}
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	cfg := modernConfig(t, "[protocol]\nmax_input_rounds = 2")
	sp := startStdioClient(t, cfg, bc.client(true, caps), protocolVersion)
	ctx := testCtx(t)
	waitTool(ctx, t, sp.cs, "beta__ask")

	res, err := callRaw(ctx, sp.cs, "beta__ask", map[string]any{"steps": "elicit,elicit,elicit"}, nil)
	if err != nil {
		t.Fatalf("beta__ask: %v", err)
	}
	if got := text(res); !res.IsError || !strings.Contains(got, `asked for input more than 2 times in one call of "ask" (max_input_rounds)`) {
		t.Errorf("beta__ask past the bound = %q (isError %v), want a tool error naming max_input_rounds", got, res.IsError)
	}

	for _, tt := range []struct{ steps, capName string }{{"sample", "sampling"}, {"url", "elicitation.url"}, {"roots", "roots"}} {
		_, err = callRaw(ctx, sp.cs, "beta__ask", map[string]any{"steps": tt.steps}, nil)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(rpcErr.Message, `capability "`+tt.capName+`"`) {
			t.Errorf("beta__ask %s without the capability: %v, want -32021 naming %s", tt.steps, err, tt.capName)
		}
	}
}

// Cell 2: a modern client and a modern server; the input_required result
// passes through with the server's requestState sealed.
func TestBridgeModernClientModernServer(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			testModernModern(t, transport)
		})
	}
}

// connectModern starts manifold with cfg and connects client to it over
// transport, offering the modern era.
func connectModern(t *testing.T, transport, cfg string, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	var cs *mcp.ClientSession
	if transport == "stdio" {
		cs = startStdioClient(t, cfg, client, "").cs
	} else {
		cs = connectHTTPClient(t, startHTTP(t, cfg), client, "")
	}
	if v := cs.InitializeResult().ProtocolVersion; v != modernVersion {
		t.Fatalf("the client negotiated %q, want %q", v, modernVersion)
	}
	return cs
}

func testModernModern(t *testing.T, transport string) {
	bc := &bridgeClient{name: "modern"}
	cs := connectModern(t, transport, modernConfig(t), bc.client(true, allCaps()))
	ctx := testCtx(t)
	waitTool(ctx, t, cs, "beta__ask")

	t.Run("auto", func(t *testing.T) {
		res, err := callRaw(ctx, cs, "beta__ask", map[string]any{"steps": askAll}, nil)
		if err != nil {
			t.Fatalf("beta__ask: %v", err)
		}
		if got, want := text(res), wantAskAll("modern"); got != want || res.IsError {
			t.Errorf("beta__ask = %q (isError %v), want %q", got, res.IsError, want)
		}
		// The relay rules hold here too.
		bc.mu.Lock()
		defer bc.mu.Unlock()
		if len(bc.elicits) != 2 || bc.elicits[0].Message != "[beta] question 1" || bc.elicits[1].Mode != "url" {
			t.Errorf("elicitations seen by the client = %+v, want [beta] question 1, then the URL one", bc.elicits)
		}
		if len(bc.samples) != 1 || bc.samples[0].IncludeContext != "none" {
			t.Errorf("sampling requests seen by the client = %+v, want one with includeContext none", bc.samples)
		}
	})

	t.Run("raw", func(t *testing.T) {
		raw := &bridgeClient{name: "raw"}
		rs := connectModern(t, transport, modernConfig(t), raw.client(false, allCaps()))
		waitTool(ctx, t, rs, "beta__ask")
		args := map[string]any{"steps": "elicit"}
		res, err := callRaw(ctx, rs, "beta__ask", args, nil)
		if err != nil || !res.NeedsInput() {
			t.Fatalf("beta__ask = %+v, %v; want input_required", res, err)
		}
		if strings.Contains(res.RequestState, "next") {
			t.Errorf("requestState %q is the server's own, unwrapped", res.RequestState)
		}
		answer := mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42"}}}
		final, err := rs.CallTool(ctx, &mcp.CallToolParams{Name: "beta__ask", Arguments: args, InputResponses: answer, RequestState: res.RequestState})
		if err != nil || !strings.Contains(text(final), `elicit action=accept content={"answer":"42"}`) {
			t.Errorf("retry = %v, %v; want the server's result with the answer", final, err)
		}
		for _, bad := range []struct{ name, tool, state, says string }{
			{"the server's raw state", "beta__ask", `{"next":0,"lines":null}`, "not one this proxy issued"},
			{"another server's tool", "alpha__elicit", res.RequestState, "belongs to another request"},
		} {
			_, err := rs.CallTool(ctx, &mcp.CallToolParams{Name: bad.tool, Arguments: args, InputResponses: answer, RequestState: bad.state})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, bad.says) {
				t.Errorf("%s: %v, want -32602 saying %q", bad.name, err, bad.says)
			}
		}
	})
}

// Cell 4: cancelling a legacy client's call while the client is asked ends
// the call upstream, one call with its round in the audit log.
func TestBridgeLegacyClientModernServerCancel(t *testing.T) {
	t.Parallel()
	bc := &bridgeClient{name: "legacy", hold: make(chan struct{}, 1)}
	cfg := modernConfig(t)
	sp := startStdioClient(t, cfg, bc.client(true, allCaps()), protocolVersion)
	ctx := testCtx(t)
	waitTool(ctx, t, sp.cs, "beta__ask")
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := callRaw(cctx, sp.cs, "beta__ask", map[string]any{"steps": "elicit"}, nil)
		errc <- err
	}()
	select {
	case <-bc.hold: // the client is being asked
	case <-ctx.Done():
		t.Fatal("the client was never asked")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned no error")
	}
	eventually(ctx, t, func() string {
		if got := auditRounds(cfg, "beta__ask"); len(got) != 1 || got[0] != "cancelled/1" {
			return fmt.Sprintf("audit of beta__ask (outcome/input_rounds) = %v, want [cancelled/1]", got)
		}
		return ""
	})
}

// Cell 3 over HTTP: a modern client's request carries no session, so a
// server with isolation = "session" runs each of its calls in a process of
// its own, whose requests belong to that call alone: the rounds of input
// work as over stdio, and the process is gone when the call ends. A shared
// server's request goes to its one caller (relay_shared_test.go has the
// attacks): here the client's call is the only one in flight on it, so its
// elicitation becomes the call's input round.
func TestBridgeModernClientLegacyServerHTTP(t *testing.T) {
	t.Parallel()
	bc := &bridgeClient{name: "modern-http"}
	cfg := writeConfig(t, "[audit]\nfile = \"audit.jsonl\"\n"+
		fixture("alpha", []string{"-tools", "echo,pid", "-extra", "interview,fanout,elicit,sample,roots"}, `isolation = "session"`)+
		fixture("shared", []string{"-tools", "echo", "-extra", "elicit"}))
	cs := connectModern(t, "http", cfg, bc.client(true, allCaps()))
	ctx := testCtx(t)
	waitTool(ctx, t, cs, "alpha__interview")
	waitTool(ctx, t, cs, "shared__elicit")

	t.Run("rounds", func(t *testing.T) {
		res, err := callRaw(ctx, cs, "alpha__interview", map[string]any{"steps": "elicit,sample,roots,url"}, nil)
		if err != nil {
			t.Fatalf("alpha__interview: %v", err)
		}
		want := "alpha: interview\n" +
			`elicit action=accept content={"answer":"modern-http 1"}` + "\n" +
			`sample model=e2e-model text=sampled by modern-http` + "\n" +
			"roots file:///tmp/bridge-root\n" +
			"url action=accept"
		if got := text(res); got != want || res.IsError {
			t.Errorf("alpha__interview = %q (isError %v), want %q", got, res.IsError, want)
		}
		eventually(ctx, t, func() string {
			if got := auditRounds(cfg, "alpha__interview"); len(got) != 1 || got[0] != "ok/4" {
				return fmt.Sprintf("audit of alpha__interview (outcome/input_rounds) = %v, want [ok/4] (one round per step)", got)
			}
			return ""
		})
	})

	t.Run("progress across rounds", func(t *testing.T) {
		// Each retry is a request of its own: the progress after a round
		// of input reaches the client on the retry's stream.
		progressAcrossRounds(ctx, t, cs, bc)
	})

	t.Run("concurrent calls", func(t *testing.T) {
		// Two calls in flight at once, each asking: each request reaches
		// its own call (no answer crosses over).
		var wg sync.WaitGroup
		got := make([]string, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := callRaw(ctx, cs, "alpha__elicit", map[string]any{"message": fmt.Sprintf("q%d", i)}, nil)
				if err != nil {
					got[i] = err.Error()
					return
				}
				got[i] = text(res)
			}()
		}
		wg.Wait()
		for i, g := range got {
			if !strings.Contains(g, "accept") {
				t.Errorf("call %d = %q, want its elicitation accepted", i, g)
			}
		}
	})

	t.Run("a process per call, gone after it", func(t *testing.T) {
		var pids []int
		for range 2 {
			res, err := callRaw(ctx, cs, "alpha__pid", map[string]any{}, nil)
			if err != nil || res.IsError {
				t.Fatalf("alpha__pid: %v %v", err, res)
			}
			pid, err := strconv.Atoi(text(res))
			if err != nil {
				t.Fatalf("alpha__pid = %q", text(res))
			}
			pids = append(pids, pid)
		}
		if pids[0] == pids[1] {
			t.Errorf("two calls ran in the same process %d, want one each", pids[0])
		}
		for _, pid := range pids {
			p, ok := readProc(pid)
			if !ok {
				continue // already gone
			}
			if left := waitGone([]procInfo{p}, awaitBound); len(left) > 0 {
				t.Errorf("the process %d of a call that ended still runs", pid)
			}
		}
	})

	t.Run("shared server", func(t *testing.T) {
		before := bc.count()
		res, err := callRaw(ctx, cs, "shared__elicit", map[string]any{"message": "why?"}, nil)
		if err != nil {
			t.Fatalf("shared__elicit: %v", err)
		}
		if got := text(res); res.IsError || !strings.Contains(got, `shared: elicit action=accept content={"answer":"modern-http`) {
			t.Errorf("shared__elicit = %q (isError %v), want the client's answer", got, res.IsError)
		}
		if n := bc.count() - before; n != 1 {
			t.Errorf("the client was asked %d times for the shared server, want 1", n)
		}
	})
}
