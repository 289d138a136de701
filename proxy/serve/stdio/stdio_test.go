package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/serve/frame"
)

// fakeCore is a root of the face's own: an SDK server with no tools, calls
// answered with their name and arguments, no prepared lists.
type fakeCore struct {
	srv   *mcp.Server
	mu    sync.Mutex
	calls []string // "name arguments" of each call started
}

func (c *fakeCore) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return c.srv.Connect(ctx, t, nil)
}

func (c *fakeCore) StartCall(_ context.Context, _ *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	c.mu.Lock()
	c.calls = append(c.calls, name+" "+string(fields["arguments"]))
	c.mu.Unlock()
	finish(json.RawMessage(`{"content":[{"type":"text","text":"ran `+name+`"}]}`), nil)
}

func (c *fakeCore) LeanList(context.Context, *mcp.ServerSession, []byte, []byte, bool) ([]byte, bool) {
	return nil, false
}

func (c *fakeCore) ServerInfo() []byte          { return []byte(`{"name":"fake","version":"0"}`) }
func (c *fakeCore) Observer() *observe.Observer { return nil }
func (c *fakeCore) Log() *slog.Logger           { return slog.New(slog.DiscardHandler) }

// TestServeThroughCore drives the face alone, its root a fakeCore: a line
// that is not JSON is answered -32700, initialize is answered by the SDK, a
// tools/call goes to Core.StartCall and its result comes back under the
// client's id, and a request whose id the SDK would spell otherwise gets
// its answer under the client's own spelling.
func TestServeThroughCore(t *testing.T) {
	c := &fakeCore{srv: mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "0"}, nil)}
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(t.Context(), c, Options{MaxMessageBytes: 1 << 20, CallTimeout: time.Minute}, pr, pw)
		pw.Close()
	}()
	br := bufio.NewReader(cr)
	ask := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(cw, line+"\n"); err != nil {
			t.Fatal(err)
		}
		out, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := ask(`not json`); !strings.Contains(out, `"id":null`) || !strings.Contains(out, `-32700`) {
		t.Errorf("a line that is not JSON: %s", out)
	}
	if out := ask(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); !strings.Contains(out, `"id":0,"result":{`) {
		t.Errorf("initialize: %s", out)
	}
	if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if out := ask(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"a__b","arguments":{"x":1}}}`); out != `{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"ran a__b"}]}}`+"\n" {
		t.Errorf("tools/call: %s", out)
	}
	if out := ask(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`); out != `{"jsonrpc":"2.0","id":1.5,"result":{}}`+"\n" {
		t.Errorf("ping of id 1.5: %s", out)
	}
	cw.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if want := []string{`a__b {"x":1}`}; len(c.calls) != 1 || c.calls[0] != want[0] {
		t.Errorf("calls started: %q, want %q", c.calls, want)
	}
}

// TestSDKIDs checks the id swap of the SDK's side alone: an id the SDK would
// spell otherwise is given to it as one of the proxy's own, and its answer
// goes back under the client's spelling; the SDK's own requests pass as they
// are, and idle is closed once nothing is pending.
func TestSDKIDs(t *testing.T) {
	ids := &sdkIDs{pending: make(map[string]int), mapped: make(map[string]json.RawMessage)}
	var buf bytes.Buffer
	w := &sdkWriter{out: &frameWriter{w: &buf}, ids: ids}
	own := ids.add([]byte(`1.5`))
	if !bytes.HasPrefix(own, []byte(frame.MappedIDPrefix)) {
		t.Fatalf("add(1.5) = %s, want an id of the proxy's own", own)
	}
	if plain := ids.add([]byte(`7`)); string(plain) != `7` {
		t.Errorf("add(7) = %s, want 7", plain)
	}
	if got := ids.own([]byte(`1.5`)); !bytes.Equal(got, own) {
		t.Errorf("own(1.5) = %s, want %s", got, own)
	}
	idle := ids.idle()
	if idle == nil {
		t.Fatal("idle() = nil with two requests pending")
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":` + string(own) + `,"result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":3,"method":"roots/list"}` + "\n",
		`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n",
	} {
		if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
			t.Fatalf("Write(%s) = %d, %v", line, n, err)
		}
	}
	want := `{"jsonrpc":"2.0","id":1.5,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"roots/list"}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"
	if buf.String() != want {
		t.Errorf("written:\n%s\nwant:\n%s", buf.String(), want)
	}
	select {
	case <-idle:
	default:
		t.Error("idle not closed once every request was answered")
	}
}
