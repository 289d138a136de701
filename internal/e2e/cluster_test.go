package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// This file tests the state that replicas share on Redis (README "Several
// replicas"): two `manifold serve --http` of the built binary with one real
// redis-server, all on loopback.

// redisServer is a redis-server started by a test, on a loopback port,
// without persistence.
type redisServer struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts redis-server on a free loopback port. It skips the
// test when redis-server is not installed, except in CI (CI set), where
// that fails: CI installs it (.ci/run).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed, and CI is set: .ci/run installs the Debian package redis-server (%v)", err)
		}
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server); the cluster tests need a real Redis")
	}
	r := &redisServer{t: t, addr: freePort(t)}
	r.start()
	t.Cleanup(r.stop)
	return r
}

// start runs redis-server on r.addr and waits until it answers PING.
func (r *redisServer) start() {
	t := r.t
	t.Helper()
	_, port, _ := net.SplitHostPort(r.addr)
	r.cmd = command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	r.done = make(chan struct{})
	out := &syncBuffer{}
	r.cmd.Stdout, r.cmd.Stderr = out, out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	deadline := time.Now().Add(readyBound)
	for !r.ping() {
		select {
		case <-r.done:
			t.Fatalf("redis-server exited at start:\n%s", out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			t.Fatalf("redis-server did not answer PING on %s within %s:\n%s", r.addr, readyBound, out)
		}
	}
}

// ping reports whether Redis answers PING.
func (r *redisServer) ping() bool {
	c, err := net.DialTimeout("tcp", r.addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// stop kills the redis-server this test started, by its pid, and waits.
// It is idempotent.
func (r *redisServer) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// replicaOpts is the config of the replicas startReplicas starts.
type replicaOpts struct {
	// n is how many replicas start. If zero, 2.
	n int
	// head is the config before the [cluster] table: top-level keys, then
	// tables such as [auth] and [http], ending with a blank line. If empty,
	// the config opens with [cluster].
	head string
	// cluster is the lines of the [cluster] table after redis, key_prefix
	// and key (which startReplicas sets: the test's Redis, a prefix of the
	// test's name, clusterKey), such as timeout and on_error. If empty,
	// none.
	cluster string
	// servers is the [servers.NAME] tables (fixture returns them).
	servers string
	// keys, if set, is written as keys.toml beside the config, readable by
	// its owner only, for head's [auth] api_keys_file = "keys.toml". If
	// empty, there is no keys.toml.
	keys string
	// files are more files beside the config (path relative to its folder
	// -> content), as policyConfig writes them. If nil, none.
	files map[string]string
}

// replicaSet is replicas of the built binary (`manifold serve --http`,
// each on its loopback port) sharing one Redis.
type replicaSet struct {
	redis    *redisServer
	cfg      string       // the replicas' config
	replicas []*httpProxy // in the order they started
}

// addrs returns the replicas' addresses (host:port), in order.
func (rs *replicaSet) addrs() []string {
	addrs := make([]string, len(rs.replicas))
	for i, r := range rs.replicas {
		addrs[i] = r.addr
	}
	return addrs
}

// startReplicas starts a redis-server (startRedis: skipped without one
// outside CI), writes the config of opts for it and starts opts.n replicas
// of that config (startHTTP: each must exit 0 when the test ends).
func startReplicas(t *testing.T, opts replicaOpts) *replicaSet {
	t.Helper()
	rs := &replicaSet{redis: startRedis(t)}
	rs.cfg = replicaConfig(t, rs.redis.addr, opts)
	n := opts.n
	if n == 0 {
		n = 2
	}
	for range n {
		rs.replicas = append(rs.replicas, startHTTP(t, rs.cfg))
	}
	return rs
}

// replicaConfig writes the config of opts for replicas that share the
// Redis at addr, with the files beside it, and returns its path. The
// [cluster] key_prefix is "e2e:" and t's name: a config written in a
// subtest has a prefix of its own.
func replicaConfig(t *testing.T, addr string, opts replicaOpts) string {
	t.Helper()
	cfg := policyConfig(t, opts.head+"[cluster]\nredis = "+tomlStr("redis://"+addr+"/0")+
		"\nkey_prefix = "+tomlStr("e2e:"+t.Name()+":")+"\nkey = "+tomlStr(clusterKey)+"\n"+opts.cluster+opts.servers, opts.files)
	if opts.keys != "" {
		if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "keys.toml"), []byte(opts.keys), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// clusterCall makes one stateless 2026-07-28 tools/call on hp (any replica
// can serve it) and returns whether the result is an error, and its text.
func clusterCall(ctx context.Context, t *testing.T, hp *httpProxy, id int, name, args string) (bool, string) {
	t.Helper()
	status, msg := eraPost(ctx, t, hp, map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": "tools/call", "Mcp-Name": name},
		modernBody(id, "tools/call", fmt.Sprintf(`"name":%q,"arguments":%s`, name, args)))
	res, ok := msg["result"].(map[string]any)
	if status != 200 || !ok {
		t.Fatalf("tools/call %s on %s: status %d, %v", name, hp.addr, status, msg)
	}
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	isErr, _ := res["isError"].(bool)
	return isErr, b.String()
}

// sharedOpts is the config of TestClusterShared's replicas: alpha__echo
// limited to 3 an hour, paid__charge with a budget of 10 credits an hour,
// bank__echo approved by a person, alpha__whoami with a limit that is never
// reached (to see the fail mode), all shared on Redis, which fails onError
// ("open" or "closed") when it cannot be reached.
func sharedOpts(onError string) replicaOpts {
	rules := `[rules.slow]
match = "alpha__echo"
rate = "3/hour"

[rules.often]
match = "alpha__whoami"
rate = "1000/minute"

[rules.paid]
match = "paid__charge"
budget = { limit = 10, window = "1h", from = "/structuredContent/credits" }

[rules.bank]
match = "bank__echo"
confirm = true
reason = "moves money"
`
	return replicaOpts{
		head:    "policy_files = [\"policy/*.toml\"]\n\n",
		cluster: "on_error = " + tomlStr(onError) + "\ntimeout = \"500ms\"\n",
		servers: fixture("alpha", []string{"-tools", "echo,whoami"}) +
			fixture("paid", []string{"-tools", "echo", "-extra", "charge"}) +
			fixture("bank", []string{"-tools", "echo"}),
		files: map[string]string{"policy/rules.toml": rules},
	}
}

// TestClusterShared: two replicas sharing one Redis count one rate limit,
// one spend cap and one set of approvals: 3 an hour admits 3 across both,
// spends through either count against one budget, and an approval given
// for a call refused by A runs once on B. Redis killed: the closed replica
// refuses what it cannot check, the open one admits it, each says so once
// in its log; Redis back: both work again.
func TestClusterShared(t *testing.T) {
	t.Parallel()
	rs := startReplicas(t, sharedOpts("closed"))
	redis, cfg, replicas := rs.redis, rs.cfg, rs.replicas
	a, b := replicas[0], replicas[1]
	ctx := testCtx(t)
	id := 0
	next := func() int { id++; return id }

	t.Run("rate limit", func(t *testing.T) {
		admitted := 0
		for i := range 8 {
			isErr, text := clusterCall(ctx, t, replicas[i%2], next(), "alpha__echo", `{"message":"hi"}`)
			switch {
			case !isErr && text == "alpha: hi":
				admitted++
			case isErr && strings.Contains(text, "rate limit: alpha__echo allows 3/hour"):
			default:
				t.Fatalf("call %d = %q (isError %v)", i+1, text, isErr)
			}
		}
		if admitted != 3 {
			t.Errorf("a limit of 3 an hour admitted %d calls across two replicas, want 3", admitted)
		}
	})

	t.Run("spend cap", func(t *testing.T) {
		for i, credits := range []int{4, 4, 3} {
			if isErr, text := clusterCall(ctx, t, replicas[i%2], next(), "paid__charge", fmt.Sprintf(`{"credits":%d}`, credits)); isErr {
				t.Fatalf("charge %d on replica %d: %q", credits, i%2, text)
			}
		}
		for _, r := range replicas {
			isErr, text := clusterCall(ctx, t, r, next(), "paid__charge", `{"credits":1}`)
			if !isErr || !strings.Contains(text, "spend cap: paid__charge has spent 11 of its budget of 10 per 1h0m0s") {
				t.Errorf("charge over the shared budget on %s = %q (isError %v), want refused with 11 spent", r.addr, text, isErr)
			}
		}
	})

	t.Run("approval", func(t *testing.T) {
		refusedIDs := func(r *httpProxy) string {
			t.Helper()
			isErr, text := clusterCall(ctx, t, r, next(), "bank__echo", `{"message":"pay bob 10"}`)
			m := refusedIDRE.FindStringSubmatch(text)
			if !isErr || m == nil {
				t.Fatalf("bank__echo without approval on %s = %q (isError %v), want refused with an approval id", r.addr, text, isErr)
			}
			return m[1]
		}
		id := refusedIDs(a)
		if again := refusedIDs(b); again != id {
			t.Errorf("replica B offered approval %s for the same call, want A's %s", again, id)
		}
		out, err := command(manifoldBin, "approve-call", "--config", cfg, "--yes", id).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Approved "+id) || !strings.Contains(string(out), `"message": "pay bob 10"`) {
			t.Fatalf("approve-call %s: %v\n%s", id, err, out)
		}
		if isErr, text := clusterCall(ctx, t, b, next(), "bank__echo", `{"message":"pay bob 10"}`); isErr || text != "bank: pay bob 10" {
			t.Fatalf("the approved call on replica B = %q (isError %v), want it to run", text, isErr)
		}
		for _, r := range replicas {
			if again := refusedIDs(r); again == id {
				t.Errorf("approval %s was used a second time on %s", id, r.addr)
			}
		}
		out, err = command(manifoldBin, "approve-call", "--config", cfg, "--yes", id).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no call waits for approval "+id) {
			t.Errorf("approve-call of a used id: %v\n%s", err, out)
		}
	})

	t.Run("redis down", func(t *testing.T) {
		open := startHTTP(t, replicaConfig(t, redis.addr, sharedOpts("open")))
		if isErr, text := clusterCall(ctx, t, open, next(), "alpha__whoami", `{}`); isErr {
			t.Fatalf("alpha__whoami on the open replica with Redis up = %q", text)
		}
		redis.stop()
		for range 3 {
			isErr, text := clusterCall(ctx, t, a, next(), "alpha__whoami", `{}`)
			if !isErr || !strings.Contains(text, "could not be checked") || !strings.Contains(text, "nothing was executed") {
				t.Fatalf("alpha__whoami with Redis down on the closed replica = %q (isError %v), want refused", text, isErr)
			}
			if isErr, text := clusterCall(ctx, t, open, next(), "alpha__whoami", `{}`); isErr {
				t.Fatalf("alpha__whoami with Redis down on the open replica = %q, want admitted", text)
			}
			if isErr, text := clusterCall(ctx, t, open, next(), "bank__echo", `{"message":"x"}`); !isErr || !strings.Contains(text, "could not be checked") {
				t.Fatalf("bank__echo with Redis down on the open replica = %q (isError %v); an approval never fails open", text, isErr)
			}
		}
		for _, r := range []*httpProxy{a, open} {
			if n := strings.Count(r.stderr.String(), "Redis cannot be reached"); n != 1 {
				t.Errorf("replica %s logged the outage %d times, want once:\n%s", r.addr, n, r.stderr)
			}
		}
		redis.start()
		// After enough refused dials go-redis's pool stops dialling and
		// probes Redis once a second, so a replica is back within about a
		// second of Redis: a call on the open replica succeeds either way,
		// hence the wait for the log line, not for a success.
		back := regexp.MustCompile(`Redis is reachable again`)
		for _, r := range []*httpProxy{a, open} {
			deadline := time.Now().Add(redisBackBound)
			for {
				isErr, text := clusterCall(ctx, t, r, next(), "alpha__whoami", `{}`)
				if !isErr && back.MatchString(r.stderr.String()) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("replica %s did not recover within %s of Redis coming back (last alpha__whoami = %q, isError %v):\n%s", r.addr, redisBackBound, text, isErr, r.stderr)
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
}

// TestDrain: SIGTERM to `serve --http` during a slow call. /readyz turns
// 503 while /healthz stays 200, a new request is refused with 503 and
// Retry-After, the slow call completes with its result, and the process
// exits 0 with every process it started gone (checked by stop).
func TestDrain(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "[http]\ndrain_grace = \"2m\"\n"+fixture("alpha", []string{"-tools", "echo,sleep"}))
	hp := startHTTP(t, cfg)
	ctx := testCtx(t)
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hp.addr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/readyz"); code != http.StatusOK {
		t.Fatalf("GET /readyz before SIGTERM = %d, want 200", code)
	}
	type result struct {
		isErr bool
		text  string
	}
	slow := make(chan result, 1)
	go func() {
		isErr, text := clusterCall(ctx, t, hp, 1, "alpha__sleep", `{"ms":4000}`)
		slow <- result{isErr, text}
	}()
	deadline := time.Now().Add(readyBound)
	for !strings.Contains(hp.stderr.String(), "sleep started") {
		if time.Now().After(deadline) {
			t.Fatalf("the slow call did not reach the server within %s:\n%s", readyBound, hp.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code := hp.stop(func() {
		if err := syscall.Kill(hp.pid(), syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
		}
		for i := 0; get("/readyz") != http.StatusServiceUnavailable; i++ {
			if i == 500 {
				t.Errorf("GET /readyz still not 503 after SIGTERM (500 probes)")
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if code := get("/healthz"); code != http.StatusOK {
			t.Errorf("GET /healthz while draining = %d, want 200", code)
		}
		status, msg := eraPost(ctx, t, hp, map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": "tools/call", "Mcp-Name": "alpha__echo"},
			modernBody(2, "tools/call", `"name":"alpha__echo","arguments":{"message":"late"}`))
		if status != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(msg), "draining") {
			t.Errorf("a new request while draining: status %d, %v; want 503 saying it drains", status, msg)
		}
		r := <-slow
		if r.isErr || r.text != "alpha: slept 4000 ms" {
			t.Errorf("the call in flight at SIGTERM = %q (isError %v), want it to complete", r.text, r.isErr)
		}
		<-hp.exited
	})
	if code != 0 {
		t.Errorf("manifold exited with status %d after draining, want 0", code)
	}
	if s := hp.stderr.String(); !strings.Contains(s, "manifold: draining") || !strings.Contains(s, "manifold: drained") {
		t.Errorf("the log does not say it drained:\n%s", s)
	}
}
