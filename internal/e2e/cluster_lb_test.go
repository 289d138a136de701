package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file tests replicas without stickiness (README "Several replicas"):
// requests of one client spread over replicas that share one Redis, first
// in a fixed round robin (TestClusterReplicas), then behind a real HAProxy
// while replicas die and drain (TestClusterLB).

// clusterKey is the [cluster] key of the tests' replicas.
const clusterKey = "e2e-cluster-key-0123456789abcdef0123456789"

// rrTransport sends each HTTP request to the next of addrs in turn, as a
// load balancer without stickiness does, with the API key if one is set.
type rrTransport struct {
	addrs []string
	key   string
	n     atomic.Int64
}

func (rt *rrTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = rt.addrs[(rt.n.Add(1)-1)%int64(len(rt.addrs))]
	r.Host = r.URL.Host
	if rt.key != "" {
		r.Header.Set("Authorization", "Bearer "+rt.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectRR connects client through rt at the given protocol version ("":
// the newest, 2026-07-28).
func connectRR(ctx context.Context, t *testing.T, rt http.RoundTripper, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: "http://replicas/mcp", HTTPClient: &http.Client{Transport: rt, Timeout: testTimeout}}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect through the replicas: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestClusterReplicas: two replicas sharing a Redis and a [cluster] key,
// each HTTP request of a client sent to the other replica than the last.
// A legacy session created on one is served by the other (the session's
// record in Redis), is refused to another identity on both, and a DELETE
// through one ends it on both; a 2026-07-28 client's requestState sealed
// by one replica opens on the other, and a call parked on one replica (a
// legacy server's questions) is resumed through the other, by its client
// only.
func TestClusterReplicas(t *testing.T) {
	t.Parallel()
	const aliceKey = "e2e-cluster-alice-0123456789abcdef"
	const bobKey = "e2e-cluster-bob-0123456789abcdef01"
	addrs := startReplicas(t, replicaOpts{
		head: "[auth]\napi_keys_file = \"keys.toml\"\n\n",
		servers: fixture("alpha", []string{"-tools", "echo"}) +
			fixture("beta", []string{"-era", "modern", "-tools", "echo", "-extra", "ask"}) +
			fixture("gamma", []string{"-tools", "echo", "-extra", "interview"}, `isolation = "session"`),
		keys: keyLine("alice", aliceKey) + keyLine("bob", bobKey),
	}).addrs()
	ctx := testCtx(t)

	t.Run("legacy session on both", func(t *testing.T) {
		rt := &rrTransport{addrs: addrs, key: aliceKey}
		cs := connectRR(ctx, t, rt, mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil), protocolVersion)
		waitTool(ctx, t, cs, "alpha__echo")
		for i := range 6 {
			msg := fmt.Sprintf("hop %d", i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": msg}})
			if err != nil {
				t.Fatalf("call %d of a session spread over two replicas: %v", i, err)
			}
			if got := text(res); got != "alpha: "+msg || res.IsError {
				t.Fatalf("call %d = %q (isError %v)", i, got, res.IsError)
			}
		}
		id := cs.ID()
		post := func(addr, key string) int {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", protocolVersion)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST to %s: %v", addr, err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, addr := range addrs {
			if code := post(addr, bobKey); code != http.StatusForbidden {
				t.Errorf("alice's session used by bob on %s: status %d, want 403", addr, code)
			}
		}
		if err := cs.Close(); err != nil {
			t.Fatalf("close (DELETE): %v", err)
		}
		for _, addr := range addrs {
			if code := post(addr, aliceKey); code != http.StatusNotFound {
				t.Errorf("alice's session after its DELETE, on %s: status %d, want 404", addr, code)
			}
		}
	})

	t.Run("requestState on the other replica", func(t *testing.T) {
		bc := &bridgeClient{name: "modern"}
		rt := &rrTransport{addrs: addrs, key: aliceKey}
		cs := connectRR(ctx, t, rt, bc.client(false, allCaps()), "")
		waitTool(ctx, t, cs, "beta__ask")
		args := map[string]any{"steps": "elicit"}
		res, err := callRaw(ctx, cs, "beta__ask", args, nil)
		if err != nil || !res.NeedsInput() {
			t.Fatalf("beta__ask = %+v, %v; want input_required", res, err)
		}
		answer := mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42"}}}
		final, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta__ask", Arguments: args, InputResponses: answer, RequestState: res.RequestState})
		if err != nil || !strings.Contains(text(final), `elicit action=accept content={"answer":"42"}`) {
			var rpcErr interface{ Error() string }
			if errors.As(err, &rpcErr) {
				t.Fatalf("the retry on the other replica: %v", rpcErr)
			}
			t.Fatalf("the retry on the other replica = %v, %v; want the server's result with the answer", final, err)
		}
	})

	// A legacy server's questions park the call on the replica that runs
	// it; each retry alternates replicas, so that every other one is
	// forwarded to the replica that holds the call (retries.go).
	t.Run("parked call resumed through the other replica", func(t *testing.T) {
		bc := &bridgeClient{name: "modern"}
		rt := &rrTransport{addrs: addrs, key: aliceKey}
		cs := connectRR(ctx, t, rt, bc.client(true, allCaps()), "")
		waitTool(ctx, t, cs, "gamma__interview")
		res, err := callRaw(ctx, cs, "gamma__interview", map[string]any{"steps": "elicit,progress,elicit,progress,elicit"}, mcp.Meta{"progressToken": "rr-tok"})
		want := "gamma: interview\n" +
			`elicit action=accept content={"answer":"modern 1"}` + "\nprogress sent\n" +
			`elicit action=accept content={"answer":"modern 2"}` + "\nprogress sent\n" +
			`elicit action=accept content={"answer":"modern 3"}`
		if err != nil || res.IsError || text(res) != want {
			t.Fatalf("three rounds spread over two replicas = %v, %v; want %q", res, err, want)
		}
		// One progress notification after the forwarded retry, one after
		// the local one: both reach the client, with its token.
		eventually(ctx, t, func() string {
			bc.mu.Lock()
			defer bc.mu.Unlock()
			if len(bc.progress) != 2 || bc.progress[0].ProgressToken != "rr-tok" || bc.progress[1].ProgressToken != "rr-tok" {
				return fmt.Sprintf("progress = %+v; want 2 notifications with the client's token", bc.progress)
			}
			return ""
		})
	})

	t.Run("parked call refused to another client", func(t *testing.T) {
		bc := &bridgeClient{name: "modern"}
		alice := connectRR(ctx, t, &rrTransport{addrs: addrs, key: aliceKey}, bc.client(false, allCaps()), "")
		waitTool(ctx, t, alice, "gamma__interview")
		args := map[string]any{"steps": "elicit"}
		res, err := callRaw(ctx, alice, "gamma__interview", args, nil)
		if err != nil || !res.NeedsInput() {
			t.Fatalf("gamma__interview = %+v (%q), %v; want input_required", res, text(res), err)
		}
		answer := mcp.InputResponseMap{}
		for k := range res.InputRequests {
			answer[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "from bob"}}
		}
		// Bob, the same client by name, on both replicas in turn: the
		// state is bound to alice's key.
		bob := connectRR(ctx, t, &rrTransport{addrs: addrs, key: bobKey}, (&bridgeClient{name: "modern"}).client(false, allCaps()), "")
		for i := range 2 {
			_, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "gamma__interview", Arguments: args, InputResponses: answer, RequestState: res.RequestState})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "belongs to another request") {
				t.Fatalf("bob's retry %d of alice's parked call: %v; want -32602 saying it belongs to another request", i, err)
			}
		}
		answer = mcp.InputResponseMap{}
		for k := range res.InputRequests {
			answer[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "from alice"}}
		}
		final, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "gamma__interview", Arguments: args, InputResponses: answer, RequestState: res.RequestState})
		if err != nil || !strings.Contains(text(final), `elicit action=accept content={"answer":"from alice"}`) {
			t.Fatalf("alice's retry after bob's were refused = %v, %v; want her answer", final, err)
		}
	})
}

// haproxy is an HAProxy started by a test in front of replicas, round robin
// without stickiness, on a loopback port.
type haproxy struct {
	addr string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// haproxyConfig is the configuration TestClusterLB runs (README "Several
// replicas" shows it): round robin, no stickiness, the replicas' /readyz as
// health check, and layer-7 retries on another replica (redispatch) for a
// request that a replica never took (conn-failure), dropped without an
// answer (empty-response: it was SIGKILLed) or refused while draining (503:
// nothing was executed).
func haproxyConfig(addr string, replicas []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 1024

defaults
    mode http
    timeout connect 2s
    timeout client 2m
    timeout server 2m
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response 503

frontend mcp
    bind %s
    default_backend manifold

backend manifold
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    default-server inter 200ms fall 1 rise 2
`, addr)
	for i, r := range replicas {
		fmt.Fprintf(&b, "    server r%d %s check\n", i+1, r)
	}
	return b.String()
}

// startHAProxy starts haproxy in front of replicas. It skips the test when
// haproxy is not installed, except in CI (CI set), where that fails: CI
// installs it (.ci/run).
func startHAProxy(t *testing.T, replicas []string) *haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("haproxy is not installed, and CI is set: .ci/run installs the Debian package haproxy (%v)", err)
		}
		t.Skip("haproxy is not installed (Debian: apt-get install haproxy); the load-balancer test needs a real one")
	}
	h := &haproxy{addr: freePort(t), out: &syncBuffer{}, done: make(chan struct{})}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(h.addr, replicas)), 0o600); err != nil {
		t.Fatal(err)
	}
	h.cmd = command(bin, "-db", "-f", cfg) // -db: in the foreground, this process
	h.cmd.Stdout, h.cmd.Stderr = h.out, h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		<-h.done
		if t.Failed() {
			t.Logf("haproxy output:\n%s", h.out)
		}
	})
	deadline := time.Now().Add(readyBound)
	for {
		resp, err := http.Get("http://" + h.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		select {
		case <-h.done:
			t.Fatalf("haproxy exited at start:\n%s", h.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy on %s did not serve /readyz within %s:\n%s", h.addr, readyBound, h.out)
		}
	}
}

// lbLoad counts what the clients of TestClusterLB saw.
type lbLoad struct {
	calls      atomic.Int64 // calls answered with their result, all clients
	modernLost atomic.Int64 // 2026-07-28 calls without their result
	legacyOK   atomic.Int64 // legacy calls answered on their session
	legacyErr  atomic.Int64 // legacy calls that failed (the client then starts a new session)
	reconnects atomic.Int64 // new sessions after such a failure

	mu     sync.Mutex
	errors []string // the legacy and modern failures, for the log; guarded by mu
}

func (l *lbLoad) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errors) < 20 {
		l.errors = append(l.errors, fmt.Sprintf(format, args...))
	}
}

// TestClusterLB: three replicas of the built binary behind a real HAProxy
// (round robin, no stickiness) with a real Redis. A load of legacy and
// 2026-07-28 go-sdk clients, bounded in calls, runs while one replica is
// SIGKILLed and another drained (SIGTERM): no 2026-07-28 call loses its
// answer, and each legacy call either is answered on its session or fails
// with an error after which a new session works (both counted). Before the
// load, a rate limit of 5 a minute admits 5 across the three, and an
// approval given with approve-call for a call refused by one replica runs
// once, on another.
func TestClusterLB(t *testing.T) {
	t.Parallel()
	rules := "[rules.few]\nmatch = \"alpha__whoami\"\nrate = \"5/minute\"\n\n[rules.bank]\nmatch = \"bank__echo\"\nconfirm = true\nreason = \"moves money\"\n"
	rs := startReplicas(t, replicaOpts{
		n:       3,
		head:    "policy_files = [\"policy/*.toml\"]\n\n[http]\ndrain_grace = \"30s\"\n\n",
		cluster: "timeout = \"1s\"\n",
		servers: fixture("alpha", []string{"-tools", "echo,whoami"}) +
			fixture("bank", []string{"-tools", "echo"}),
		files: map[string]string{"policy/rules.toml": rules},
	})
	cfg, replicas := rs.cfg, rs.replicas
	lb := startHAProxy(t, rs.addrs())
	front := &httpProxy{addr: lb.addr} // eraPost and clusterCall need only the address
	ctx := testCtx(t)
	id := 0
	next := func() int { id++; return id }

	t.Run("rate limit across replicas", func(t *testing.T) {
		admitted := 0
		for i := range 12 {
			isErr, text := clusterCall(ctx, t, front, next(), "alpha__whoami", `{}`)
			switch {
			case !isErr:
				admitted++
			case strings.Contains(text, "rate limit: alpha__whoami allows 5/minute"):
			default:
				t.Fatalf("call %d = %q (isError %v)", i+1, text, isErr)
			}
		}
		if admitted != 5 {
			t.Errorf("a limit of 5 a minute admitted %d of 12 calls across three replicas, want 5", admitted)
		}
	})

	t.Run("approval across replicas", func(t *testing.T) {
		refused := func() string {
			t.Helper()
			isErr, text := clusterCall(ctx, t, front, next(), "bank__echo", `{"message":"pay bob 10"}`)
			m := refusedIDRE.FindStringSubmatch(text)
			if !isErr || m == nil {
				t.Fatalf("bank__echo without approval = %q (isError %v), want refused with an approval id", text, isErr)
			}
			return m[1]
		}
		apID := refused() // one replica offers it; round robin sends the retry to the next
		out, err := command(manifoldBin, "approve-call", "--config", cfg, "--yes", apID).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Approved "+apID) {
			t.Fatalf("approve-call %s: %v\n%s", apID, err, out)
		}
		if isErr, text := clusterCall(ctx, t, front, next(), "bank__echo", `{"message":"pay bob 10"}`); isErr || text != "bank: pay bob 10" {
			t.Fatalf("the approved call on the next replica = %q (isError %v), want it to run", text, isErr)
		}
		for range 3 { // every replica once more
			if again := refused(); again == apID {
				t.Fatalf("approval %s was used a second time", apID)
			}
		}
	})

	t.Run("load while one dies and one drains", func(t *testing.T) {
		// Of each era; each call is a tools/call. The load ends when the
		// test closes stop, after the kill and the drain; perClient only
		// bounds it, with room for a fast machine (1,200 calls once
		// finished before the drain began).
		const clients, perClient = 3, 3000
		var load lbLoad
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(2)
			go func() {
				defer wg.Done()
				cl := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("modern-%d", c), Version: "1"}, nil)
				tr := &mcp.StreamableClientTransport{Endpoint: "http://" + lb.addr + "/mcp", HTTPClient: &http.Client{Timeout: testTimeout}}
				cs, err := cl.Connect(ctx, tr, nil)
				if err != nil {
					load.modernLost.Add(perClient)
					load.note("modern %d: connect: %v", c, err)
					return
				}
				defer cs.Close()
				for i := 0; i < perClient; i++ {
					select {
					case <-stop:
						return
					default:
					}
					msg := fmt.Sprintf("m%d-%d", c, i)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": msg}})
					if err != nil || res.IsError || text(res) != "alpha: "+msg {
						load.modernLost.Add(1)
						load.note("modern %d call %d: %v %v", c, i, err, res)
						continue
					}
					load.calls.Add(1)
				}
			}()
			go func() {
				defer wg.Done()
				connect := func() *mcp.ClientSession {
					cl := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("legacy-%d", c), Version: "1"}, nil)
					tr := &mcp.StreamableClientTransport{Endpoint: "http://" + lb.addr + "/mcp", HTTPClient: &http.Client{Timeout: testTimeout}}
					for range 5 {
						cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
						if err == nil {
							return cs
						}
						load.note("legacy %d: connect: %v", c, err)
						time.Sleep(100 * time.Millisecond)
					}
					return nil
				}
				cs := connect()
				if cs == nil {
					load.legacyErr.Add(1)
					return
				}
				defer func() { _ = cs.Close() }()
				for i := 0; i < perClient; i++ {
					select {
					case <-stop:
						return
					default:
					}
					msg := fmt.Sprintf("l%d-%d", c, i)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": msg}})
					if err == nil && !res.IsError && text(res) == "alpha: "+msg {
						load.legacyOK.Add(1)
						load.calls.Add(1)
						continue
					}
					load.legacyErr.Add(1)
					load.note("legacy %d call %d: %v %v", c, i, err, res)
					_ = cs.Close()
					if cs = connect(); cs == nil {
						return
					}
					load.reconnects.Add(1)
				}
			}()
		}
		finished := make(chan struct{}) // every client has made its calls
		go func() {
			wg.Wait()
			close(finished)
		}()
		waitCalls := func(n int64) {
			t.Helper()
			for load.calls.Load() < n {
				select {
				case <-finished:
					t.Fatalf("the clients made all their calls (%d answered) before the replicas were stopped; raise perClient", load.calls.Load())
				case <-ctx.Done():
					t.Fatalf("the load made %d calls, want %d: %v", load.calls.Load(), n, ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
		waitCalls(30)
		killed := replicas[0]
		killed.stop(func() {
			_ = syscall.Kill(killed.pid(), syscall.SIGKILL)
			<-killed.exited
		})
		killed.mu.Lock()
		killed.code = 0 // the test's own SIGKILL, not a failure of manifold
		killed.mu.Unlock()
		waitCalls(load.calls.Load() + 30)
		drained := replicas[1]
		drainedCode := make(chan int, 1)
		go func() {
			drainedCode <- drained.stop(func() {
				_ = syscall.Kill(drained.pid(), syscall.SIGTERM)
				<-drained.exited
			})
		}()
		waitCalls(load.calls.Load() + 30)
		close(stop)
		<-finished
		if code := <-drainedCode; code != 0 {
			t.Errorf("the drained replica exited with status %d, want 0", code)
		}
		t.Logf("load: %d calls answered; 2026-07-28 calls lost %d; legacy calls answered on their session %d, failed %d (then a new session: %d)",
			load.calls.Load(), load.modernLost.Load(), load.legacyOK.Load(), load.legacyErr.Load(), load.reconnects.Load())
		if n := load.modernLost.Load(); n != 0 {
			t.Errorf("%d 2026-07-28 calls lost their answer, want 0: %v", n, load.errors)
		}
		if load.legacyErr.Load() > load.reconnects.Load() {
			t.Errorf("a legacy client could not start a new session after a failure: %v", load.errors)
		}
		if len(load.errors) > 0 {
			t.Logf("failures seen: %v", load.errors)
		}
	})
}
