package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPublishStatusOnChange: the status file is written at once, not
// rewritten while nothing changes (checked every 10ms here; a server's
// uptime is no change), rewritten when something does, and removed when
// publishing stops; a reader gets the uptime as of its reading.
func TestPublishStatusOnChange(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dial := func(context.Context) (mcp.Transport, error) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	p, err := proxy.New(proxy.Options{Servers: []proxy.ServerConfig{{Upstream: upstream.Options{Name: "up", Dial: dial}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the in-memory server did not start within 10s")
	}
	if st := p.Status(); len(st) != 1 || st[0].Uptime <= 0 {
		t.Fatalf("status %+v; want the server up", st)
	}
	path := filepath.Join(runDir(), strconv.Itoa(os.Getpid())+".json")
	read := func() (instanceStatus, bool) {
		var st instanceStatus
		b, err := os.ReadFile(path)
		return st, err == nil && json.Unmarshal(b, &st) == nil
	}
	wait := func(what string, ok func(instanceStatus) bool) instanceStatus {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if st, found := read(); found && ok(st) {
				return st
			}
		}
		t.Fatalf("the status file did not get %s within 10s", what)
		return instanceStatus{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	notes := &notices{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		publishStatus(ctx, p, "/etc/manifold/proxy.toml", "stdio", 10*time.Millisecond, notes)
	}()
	first := wait("written", func(instanceStatus) bool { return true })
	time.Sleep(300 * time.Millisecond) // 30 checks
	if st, _ := read(); !st.Updated.Equal(first.Updated) {
		t.Errorf("rewritten though nothing changed: updated %v, then %v", first.Updated, st.Updated)
	}
	running := runningInstances("/etc/manifold/proxy.toml")
	if len(running) != 1 || len(running[0].Servers) != 1 || running[0].Servers[0].Uptime < first.Servers[0].Uptime+300*time.Millisecond {
		t.Errorf("read back: %+v; want the server's uptime at least %v (written %v, 300ms ago)", running, first.Servers[0].Uptime+300*time.Millisecond, first.Servers[0].Uptime)
	}
	notes.setRestart("[cluster] changed: restart to apply it")
	st := wait("the change", func(st instanceStatus) bool { return st.RestartNeeded != "" })
	if !st.Updated.After(first.Updated) {
		t.Errorf("rewritten with updated %v, not after the first %v", st.Updated, first.Updated)
	}
	cancel()
	<-done
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the status file is still there after publishing stopped: %v", err)
	}
}

// TestRunningInstancesOfDescriptor: a config named by a file descriptor
// (--config <(…) is /dev/fd/63 for every pipe) matches no running
// instance, though one started from another pipe has the same name; a
// config named by its file matches its instance.
func TestRunningInstancesOfDescriptor(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if err := os.MkdirAll(runDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	for i, cfg := range []string{"/dev/fd/63", "/etc/manifold/proxy.toml"} {
		b, err := json.Marshal(instanceStatus{PID: os.Getpid(), Config: cfg, Mode: "stdio", Started: time.Now().UTC(), Updated: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(runDir(), strconv.Itoa(i)+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := runningInstances("/dev/fd/63"); len(got) != 0 {
		t.Errorf("instances of /dev/fd/63: %+v; want none (any pipe has that name)", got)
	}
	if got := runningInstances("/etc/manifold/proxy.toml"); len(got) != 1 || got[0].Config != "/etc/manifold/proxy.toml" {
		t.Errorf("instances of /etc/manifold/proxy.toml: %+v; want its own", got)
	}
}
