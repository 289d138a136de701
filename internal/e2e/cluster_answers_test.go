//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but they are among the questions a legacy session relays, which is what is tested.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerRouter routes a legacy client's HTTP requests over replicas as a
// load balancer without stickiness may: the tools/call POSTs alternate
// replicas, and each answer to a server→client request (a POST of a
// JSON-RPC response) goes to the replica that did NOT get the call that
// asked it; everything else goes round robin. Before each answer it lets
// forge send copies of it; with retry, an answer refused with 503 is sent
// again to the replica of the call, as a balancer retries elsewhere.
type answerRouter struct {
	addrs []string
	key   string

	mu    sync.Mutex
	forge func(r *http.Request, body []byte, to string) // guarded by mu
	retry bool                                          // guarded by mu
	// pending counts the answers being routed: a call can complete before
	// the POST of its last answer has returned (the replica acts on the
	// answer before it responds), so stats and set wait for them (settle).
	pending int // guarded by mu

	n        int    // requests routed round robin; guarded by mu
	calls    int    // tools/call POSTs; guarded by mu
	lastCall int    // the replica of the last tools/call; guarded by mu
	answers  []int  // the status of each answer POST to the other replica; guarded by mu
	retryAft string // the Retry-After of the last 503; guarded by mu
	retried  []int  // the status of each answer sent again to the replica of the call; guarded by mu
}

func (ar *answerRouter) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	var msg map[string]json.RawMessage
	_ = json.Unmarshal(body, &msg)
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	_, isResult := msg["result"]
	_, isError := msg["error"]
	answer := r.Method == http.MethodPost && method == "" && (isResult || isError)

	if answer {
		ar.mu.Lock()
		ar.pending++
		ar.mu.Unlock()
		defer func() {
			ar.mu.Lock()
			ar.pending--
			ar.mu.Unlock()
		}()
	}
	ar.mu.Lock()
	var to int
	switch {
	case r.Method == http.MethodPost && method == "tools/call":
		to = ar.calls % len(ar.addrs)
		ar.calls++
		ar.lastCall = to
	case answer:
		to = (ar.lastCall + 1) % len(ar.addrs)
	default:
		to = ar.n % len(ar.addrs)
		ar.n++
	}
	call, forge, retryOn := ar.lastCall, ar.forge, ar.retry
	ar.mu.Unlock()

	if answer && forge != nil {
		forge(r, body, ar.addrs[to])
	}
	resp, err := ar.send(r, body, ar.addrs[to], ar.key)
	if err != nil || !answer {
		return resp, err
	}
	ar.mu.Lock()
	ar.answers = append(ar.answers, resp.StatusCode)
	if resp.StatusCode == http.StatusServiceUnavailable {
		ar.retryAft = resp.Header.Get("Retry-After")
	}
	retry := retryOn && resp.StatusCode == http.StatusServiceUnavailable
	ar.mu.Unlock()
	if !retry {
		return resp, nil
	}
	resp.Body.Close()
	resp, err = ar.send(r, body, ar.addrs[call], ar.key)
	if err == nil {
		ar.mu.Lock()
		ar.retried = append(ar.retried, resp.StatusCode)
		ar.mu.Unlock()
	}
	return resp, err
}

// send sends a copy of r with body to addr, with the API key key.
func (ar *answerRouter) send(r *http.Request, body []byte, addr, key string) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = addr, addr
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Authorization", "Bearer "+key)
	return http.DefaultTransport.RoundTrip(r)
}

// stats returns the statuses of the answers, the last Retry-After of a
// 503, and the statuses of the answers sent again.
func (ar *answerRouter) stats() ([]int, string, []int) {
	ar.settle()
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return append([]int(nil), ar.answers...), ar.retryAft, append([]int(nil), ar.retried...)
}

// settle waits (at most a minute) until no answer is being routed.
func (ar *answerRouter) settle() {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ar.mu.Lock()
		n := ar.pending
		ar.mu.Unlock()
		if n == 0 {
			return
		}
	}
}

// set sets forge and retry, once the answers being routed are through.
func (ar *answerRouter) set(forge func(r *http.Request, body []byte, to string), retry bool) {
	ar.settle()
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.forge, ar.retry = forge, retry
}

// TestClusterAnswers: a legacy session on two replicas, each tools/call on
// the other replica than the last, and each answer of the client to the
// server's questions during the call (elicitation, sampling, roots) sent to
// the replica that did not ask it. Every call completes with the client's
// answers (the replica that got an answer relays it over Redis to the one
// that asked); a copy of each answer sent with another identity is refused
// with 403, and one sent on another session of the same client is accepted
// but answers nothing. Redis down: an answer for the other replica is
// refused with 503 and Retry-After: 1, and the same answer retried on the
// replica that asked completes the call.
func TestClusterAnswers(t *testing.T) {
	t.Parallel()
	const aliceKey = "e2e-answers-alice-0123456789abcdef"
	const bobKey = "e2e-answers-bob-0123456789abcdef01"
	rs := startReplicas(t, replicaOpts{
		head:    "call_timeout = \"8s\"\n\n[auth]\napi_keys_file = \"keys.toml\"\n\n",
		servers: fixture("alpha", []string{"-tools", "echo", "-extra", "interview"}, `isolation = "session"`),
		keys:    keyLine("alice", aliceKey) + keyLine("bob", bobKey),
	})
	redis, addrs := rs.redis, rs.addrs()
	a, b := rs.replicas[0], rs.replicas[1]
	ctx := testCtx(t)

	newClient := func(name string) *mcp.Client {
		var n int
		var mu sync.Mutex
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{
				Sampling:    &mcp.SamplingCapabilities{},
				Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
				RootsV2:     &mcp.RootCapabilities{},
			},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				n++
				k := n
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": fmt.Sprintf("%s %d", name, k)}}, nil
			},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: "sampled by " + name}}, nil
			},
		})
		c.AddRoots(&mcp.Root{URI: "file:///tmp/" + name + "-root", Name: "root"})
		return c
	}

	// Another session of the same client (same key, address and user):
	// its copies of alice's answers must answer nothing.
	other := connectRR(ctx, t, &rrTransport{addrs: addrs, key: aliceKey}, newClient("other"), protocolVersion)
	waitTool(ctx, t, other, "alpha__interview")

	ar := &answerRouter{addrs: addrs, key: aliceKey}
	var forgedMu sync.Mutex
	forged := map[string][]int{} // status of the forged copies, by who sent them
	ar.set(func(r *http.Request, body []byte, to string) {
		fake := bytes.ReplaceAll(body, []byte("alice"), []byte("forged"))
		for _, f := range []struct{ who, key, session string }{
			{"bob", bobKey, r.Header.Get("Mcp-Session-Id")},
			{"other session", aliceKey, other.ID()},
		} {
			fr := r.Clone(ctx)
			fr.Header.Set("Mcp-Session-Id", f.session)
			resp, err := ar.send(fr, fake, to, f.key)
			if err != nil {
				t.Errorf("forged answer by %s: %v", f.who, err)
				continue
			}
			resp.Body.Close()
			forgedMu.Lock()
			forged[f.who] = append(forged[f.who], resp.StatusCode)
			forgedMu.Unlock()
		}
	}, false)
	cs := connectRR(ctx, t, ar, newClient("alice"), protocolVersion)
	waitTool(ctx, t, cs, "alpha__interview")

	const calls = 4
	want := func(i int) string {
		return "alpha: interview\n" +
			fmt.Sprintf(`elicit action=accept content={"answer":"alice %d"}`, i) + "\n" +
			"sample model=e2e-model text=sampled by alice\n" +
			"roots file:///tmp/alice-root"
	}
	for i := 1; i <= calls; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__interview", Arguments: map[string]any{"steps": "elicit,sample,roots"}})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := text(res); got != want(i) || res.IsError {
			t.Fatalf("call %d, its questions answered through the other replica = %q (isError %v), want %q", i, got, res.IsError, want(i))
		}
	}
	answers, _, _ := ar.stats()
	if len(answers) < 3*calls {
		t.Errorf("%d answers went to the replica that did not ask, want at least %d (3 a call)", len(answers), 3*calls)
	}
	for i, code := range answers {
		if code != http.StatusAccepted {
			t.Errorf("answer %d to the other replica: status %d, want 202", i+1, code)
		}
	}
	forgedMu.Lock()
	for who, want := range map[string]int{"bob": http.StatusForbidden, "other session": http.StatusAccepted} {
		if len(forged[who]) != len(answers) {
			t.Errorf("%s forged %d answers, want %d (one per answer)", who, len(forged[who]), len(answers))
		}
		for i, code := range forged[who] {
			if code != want {
				t.Errorf("forged answer %d by %s: status %d, want %d", i+1, who, code, want)
			}
		}
	}
	forgedMu.Unlock()
	t.Logf("%d calls, %d answers relayed to the replica that asked, all 202; forged copies: %v", calls, len(answers), forged)

	t.Run("redis down", func(t *testing.T) {
		ar.set(nil, true)
		redis.stop()
		const i = calls + 1
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__interview", Arguments: map[string]any{"steps": "elicit"}})
		if err != nil {
			t.Fatalf("call with Redis down: %v", err)
		}
		wantDown := "alpha: interview\n" + fmt.Sprintf(`elicit action=accept content={"answer":"alice %d"}`, i)
		if got := text(res); got != wantDown || res.IsError {
			t.Errorf("call with Redis down, its answer retried on the replica that asked = %q (isError %v), want %q", got, res.IsError, wantDown)
		}
		answers, retryAfter, retried := ar.stats()
		if last := answers[len(answers)-1]; last != http.StatusServiceUnavailable || retryAfter != "1" {
			t.Errorf("the answer to the other replica with Redis down: status %d, Retry-After %q; want 503 and 1", last, retryAfter)
		}
		if len(retried) != 1 || retried[0] != http.StatusAccepted {
			t.Errorf("the answer retried on the replica that asked: %v, want [202]", retried)
		}
		for _, r := range []*httpProxy{a, b} {
			if n := strings.Count(r.stderr.String(), "could not be relayed"); n > 1 {
				t.Errorf("replica %s logged the relay outage %d times, want at most once:\n%s", r.addr, n, r.stderr)
			}
		}
	})
}
