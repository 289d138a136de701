package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/upstream"
)

const (
	initLine        = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// newStdioServer starts a proxy in front of one in-memory upstream with the
// tool rec__secret_tool.
func newStdioServer(t testing.TB, opts Options) *Server {
	t.Helper()
	rec := &recordingServer{}
	opts.Servers = []ServerConfig{{Upstream: upstream.Options{Name: "rec", Dial: rec.dial(t)}, Prefix: "rec"}}
	s := startedServer(t, opts)
	return s
}

// rawSession drives ServeStdio with raw lines.
type rawSession struct {
	t      *testing.T
	broken string // set once the session failed; later steps fail at once
	in     *io.PipeWriter
	lines  chan []byte
	served chan error
}

func openRaw(t *testing.T, s *Server) *rawSession {
	t.Helper()
	return openRawVersion(t, s, "2025-11-25")
}

// openRawVersion is openRaw with an initialize at protocol version v; v ""
// sends no initialize (a 2026-07-28 client).
func openRawVersion(t *testing.T, s *Server, v string) *rawSession {
	t.Helper()
	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	rs := &rawSession{t: t, in: cw, lines: make(chan []byte, 64), served: make(chan error, 1)}
	go func() { rs.served <- s.ServeStdio(t.Context(), pr, pw); pw.Close() }()
	go func() {
		br := bufio.NewReader(cr)
		for {
			l, err := br.ReadBytes('\n')
			if len(l) > 0 {
				rs.lines <- l
			}
			if err != nil {
				close(rs.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		cw.Close()
		select {
		case err := <-rs.served:
			if err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("ServeStdio did not return after stdin closed")
		}
	})
	if v != "" {
		rs.send(strings.Replace(initLine, "2025-11-25", v, 1))
		rs.until(`0`, 0)
		rs.send(initializedLine)
	}
	return rs
}

// fail ends the current test and every later step of the session.
func (rs *rawSession) fail(format string, args ...any) {
	rs.t.Helper()
	rs.broken = fmt.Sprintf(format, args...)
	rs.t.Fatal(rs.broken)
}

func (rs *rawSession) send(line string) {
	rs.t.Helper()
	if rs.broken != "" {
		rs.t.Fatalf("session failed earlier: %s", rs.broken)
	}
	done := make(chan error, 1)
	go func() { _, err := io.WriteString(rs.in, line+"\n"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			rs.fail("writing to the proxy: %v", err)
		}
	case <-time.After(20 * time.Second):
		rs.fail("the proxy stopped reading its input")
	}
}

// answer is what one output line says, in short.
type answer struct {
	ID     string // raw JSON
	Code   int64  // 0 for a result
	Result bool
}

func parseAnswer(t *testing.T, line []byte) answer {
	t.Helper()
	if !utf8.Valid(line) || !json.Valid(line) || line[len(line)-1] != '\n' || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("output line is not one UTF-8 JSON line: %q", line)
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		t.Fatalf("output line is not a JSON-RPC message: %q (%v)", line, err)
	}
	a := answer{ID: string(m.ID), Result: m.Result != nil}
	if m.Error != nil {
		a.Code = m.Error.Code
	}
	return a
}

// until reads answers until the one with id arrives and at least n others
// did; it returns the others.
func (rs *rawSession) until(id string, n int) []answer {
	rs.t.Helper()
	if rs.broken != "" {
		rs.t.Fatalf("session failed earlier: %s", rs.broken)
	}
	var got []answer
	seen := false
	timeout := time.After(20 * time.Second)
	for !seen || len(got) < n {
		select {
		case l, ok := <-rs.lines:
			if !ok {
				rs.fail("the proxy closed stdout; answers so far: %v", got)
			}
			a := parseAnswer(rs.t, l)
			if a.ID == id && !seen {
				seen = true
				continue
			}
			got = append(got, a)
		case <-timeout:
			rs.fail("no answer with id %s within 20s; answers so far: %v", id, got)
		}
	}
	return got
}

func errAns(id string, code int64) answer { return answer{ID: id, Code: code} }
func okAns(id string) answer              { return answer{ID: id, Result: true} }

const (
	parseError     = -32700
	invalidRequest = -32600
)

// stdioAttackCases are lines a client may send; after each, the proxy must
// answer as told and go on serving.
var stdioAttackCases = []struct {
	name string
	line string
	want []answer
}{
	{"invalid JSON", `{"jsonrpc":`, []answer{errAns("null", parseError)}},
	{"truncated object", `{"jsonrpc":"2.0","id":1,"method":"ping"`, []answer{errAns("null", parseError)}},
	{"plain text", `hello there`, []answer{errAns("null", parseError)}},
	{"binary bytes", "\x00\x01\xff\xfe\x80", []answer{errAns("null", parseError)}},
	{"UTF-8 BOM", "\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`, []answer{errAns("null", parseError)}},
	{"trailing garbage", `{"jsonrpc":"2.0","id":3,"method":"ping"} garbage`, []answer{errAns("null", parseError)}},
	{"two frames on one line", `{"jsonrpc":"2.0","id":4,"method":"ping"}{"jsonrpc":"2.0","id":5,"method":"ping"}`, []answer{errAns("null", parseError)}},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":6,"method":"ping"}`, []answer{errAns("6", invalidRequest)}},
	{"jsonrpc missing", `{"id":7,"method":"ping"}`, []answer{errAns("7", invalidRequest)}},
	{"jsonrpc a number", `{"jsonrpc":2.0,"id":7,"method":"ping"}`, []answer{errAns("7", invalidRequest)}},
	{"method a number", `{"jsonrpc":"2.0","id":8,"method":5}`, []answer{errAns("8", invalidRequest)}},
	{"method null", `{"jsonrpc":"2.0","id":8,"method":null}`, []answer{errAns("8", invalidRequest)}},
	{"empty array", `[]`, []answer{errAns("null", invalidRequest)}},
	{"array of numbers", `[1,2,3]`, []answer{errAns("null", invalidRequest)}},
	{"batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":10,"method":"ping"}]`, []answer{errAns("null", invalidRequest)}},
	{"batch with a duplicate id", `[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"ping"}]`, []answer{errAns("null", invalidRequest)}},
	{"bare string", `"ping"`, []answer{errAns("null", invalidRequest)}},
	{"null", `null`, []answer{errAns("null", invalidRequest)}},
	{"number", `42`, []answer{errAns("null", invalidRequest)}},
	{"id an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, []answer{errAns("null", invalidRequest)}},
	{"id an array", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, []answer{errAns("null", invalidRequest)}},
	{"id true", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, []answer{errAns("null", invalidRequest)}},
	{"id null", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, []answer{errAns("null", invalidRequest)}},
	{"params a string", `{"jsonrpc":"2.0","id":14,"method":"ping","params":"x"}`, []answer{errAns("14", invalidRequest)}},
	{"no method, result or error", `{"jsonrpc":"2.0","id":13}`, []answer{errAns("13", invalidRequest)}},
	{"deep params", `{"jsonrpc":"2.0","id":15,"method":"ping","params":{"a":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}`, []answer{errAns("null", invalidRequest)}},
	{"deep arguments", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"rec__secret_tool","arguments":{"a":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}}`, []answer{errAns("null", invalidRequest)}},
	{"1001 levels", `{"jsonrpc":"2.0","id":17,"method":"ping","params":{"a":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}}`, []answer{errAns("17", invalidRequest)}},
	{"1000 levels are fine", `{"jsonrpc":"2.0","id":18,"method":"ping","params":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}`, []answer{okAns("18")}},
	{"non-UTF-8 id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}", []answer{errAns("null", parseError)}},
	{"METHOD in capitals", `{"jsonrpc":"2.0","id":19,"method":"ping","METHOD":"tools/call","params":{"name":"rec__secret_tool"}}`, []answer{errAns("19", invalidRequest)}},
	{"only METHOD", `{"jsonrpc":"2.0","id":19,"METHOD":"tools/call","params":{"name":"rec__secret_tool"}}`, []answer{errAns("19", invalidRequest)}},
	{"duplicate method", `{"jsonrpc":"2.0","id":20,"method":"ping","method":"tools/call","params":{"name":"rec__secret_tool"}}`, []answer{errAns("20", invalidRequest)}},
	{"duplicate id", `{"jsonrpc":"2.0","id":21,"id":22,"method":"ping"}`, []answer{errAns("null", invalidRequest)}},
	{"escaped method key", `{"jsonrpc":"2.0","id":23,"\u006dethod":"ping"}`, []answer{errAns("23", invalidRequest)}},
	{"Id in capitals", `{"jsonrpc":"2.0","Id":24,"method":"ping"}`, []answer{errAns("null", invalidRequest)}},
	{"params spelled with a long s", `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"x"},"paramſ":{"name":"rec__secret_tool"}}`, []answer{errAns("25", invalidRequest)}}, // encoding/json folds ſ to s
	{"only params spelled with a long s", `{"jsonrpc":"2.0","id":26,"method":"tools/call","paramſ":{"name":"rec__secret_tool"}}`, []answer{errAns("26", invalidRequest)}},
	{"malformed response", `{"jsonrpc":"2.0","id":99,"error":"x"}`, nil},
	{"response to an unknown id", `{"jsonrpc":"2.0","id":12345,"result":{}}`, nil},
	{"response with a fractional id", `{"jsonrpc":"2.0","id":1.5,"result":{}}`, nil},
	{"blank line", `   `, nil},
	{"id 1.5", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, []answer{okAns("1.5")}},
	{"id with 30 digits", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, []answer{okAns("123456789012345678901234567890")}},
	{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, []answer{okAns("1e400")}},
	{"id 2^53+1", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, []answer{okAns("9007199254740993")}}, // the SDK alone answers 9007199254740992
	{"id the largest int64", `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`, []answer{okAns("9223372036854775807")}},
	{"id -0", `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, []answer{okAns("-0")}},
	{"id 1E2", `{"jsonrpc":"2.0","id":1E2,"method":"ping"}`, []answer{okAns("1E2")}},
	{"id with escapes", `{"jsonrpc":"2.0","id":"\u00e9\ud800","method":"ping"}`, []answer{okAns(`"\u00e9\ud800"`)}},
	{"id in the proxy's space", `{"jsonrpc":"2.0","id":"~mf.1","method":"ping"}`, []answer{okAns(`"~mf.1"`)}},
	{"id with U+2028", "{\"jsonrpc\":\"2.0\",\"id\":\"a\u2028b\",\"method\":\"ping\"}", []answer{okAns("\"a\u2028b\"")}},
	{"lean call with id 1.5", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"rec__secret_tool","arguments":{}}}`, []answer{okAns("1.5")}},
	{"lean call with a 30-digit id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"rec__secret_tool","arguments":{}}}`, []answer{okAns("123456789012345678901234567890")}},
	{"lean call with params an array", `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":[1]}`, []answer{errAns("25", -32602)}},
	{"SDK call with id 1.5", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, []answer{okAns("1.5")}},
}

// TestStdioSurvivesBadLines sends every kind of bad line; each gets the
// JSON-RPC error the spec prescribes (or nothing, for a response), ids come
// back exactly as sent, and the next request is still answered.
func TestStdioSurvivesBadLines(t *testing.T) {
	s := newStdioServer(t, Options{})
	for i, tc := range stdioAttackCases {
		t.Run(tc.name, func(t *testing.T) {
			rs := openRaw(t, s)
			after := fmt.Sprintf(`"after-%d"`, i)
			rs.send(tc.line + "\n" + `{"jsonrpc":"2.0","id":` + after + `,"method":"ping"}`)
			got := rs.until(after, len(tc.want))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answers to %.80q (-want +got):\n%s", tc.line, diff)
			}
		})
	}
}

// TestStdioOversizedFrame: a line over max_message_bytes is discarded with an
// error (id null) and the session goes on.
func TestStdioOversizedFrame(t *testing.T) {
	s := newStdioServer(t, Options{MaxMessageBytes: 4096})
	rs := openRaw(t, s)
	for _, n := range []int{4000, 4031, 4032, 300 << 10, 3 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rs.t = t
			line := `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"` + strings.Repeat("x", n) + `"}}`
			rs.send(line + "\n" + `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
			want := []answer{errAns("null", invalidRequest)}
			if len(line) < 4096 {
				want = []answer{okAns(`"big"`)}
			}
			if diff := cmp.Diff(want, rs.until(`"after"`, 1)); diff != "" {
				t.Errorf("answers to a %d-byte line (-want +got):\n%s", len(line), diff)
			}
		})
	}
}

// TestStdioAnswersBeforeEOF: requests read before the end of input are
// answered before ServeStdio returns, on the lean and the SDK path, with and
// without a final newline.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	s := newStdioServer(t, Options{})
	for _, tc := range []struct {
		name, last, id string
	}{
		{"lean call", `{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"rec__secret_tool","arguments":{}}}` + "\n", `"last"`},
		{"lean call without newline", `{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"rec__secret_tool","arguments":{}}}`, `"last"`},
		{"SDK request", `{"jsonrpc":"2.0","id":"last","method":"tools/list"}` + "\n", `"last"`},
		{"SDK request without newline", `{"jsonrpc":"2.0","id":"last","method":"tools/list"}`, `"last"`},
		{"mapped id without newline", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `1.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, cw := io.Pipe()
			var out bytes.Buffer
			served := make(chan error, 1)
			ow := &syncBuffer{b: &out}
			go func() { served <- s.ServeStdio(t.Context(), pr, ow) }()
			io.WriteString(cw, initLine+"\n")
			if !ow.waitFor(`"id":0`, 20*time.Second) {
				t.Fatalf("initialize not answered; output: %s", ow.bytes())
			}
			io.WriteString(cw, initializedLine+"\n"+tc.last)
			cw.Close()
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("ServeStdio: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("ServeStdio did not return after the end of input")
			}
			var ids []string
			for _, l := range bytes.SplitAfter(ow.bytes(), []byte("\n")) {
				if len(l) > 0 {
					if a := parseAnswer(t, l); a.Result {
						ids = append(ids, a.ID)
					}
				}
			}
			if diff := cmp.Diff([]string{"0", tc.id}, ids); diff != "" {
				t.Errorf("results written before exit (-want +got):\n%s", diff)
			}
		})
	}
}

// syncBuffer is an io.Writer whose contents can be read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.b.Bytes())
}

// waitFor polls until the output contains s, up to d.
func (w *syncBuffer) waitFor(s string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if bytes.Contains(w.bytes(), []byte(s)) {
			return true
		}
	}
	return false
}

// FuzzStdioLine: whatever one line holds, the proxy answers it at most once,
// writes only UTF-8 JSON-RPC lines, keeps serving (the request after it is
// answered) and returns cleanly at the end of input.
func FuzzStdioLine(f *testing.F) {
	for _, tc := range stdioAttackCases {
		f.Add([]byte(tc.line))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"ping-fz","method":"ping"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"ping-fz"}}`))
	s := newStdioServer(f, Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // one line at a time
		}
		in := []byte(strings.ReplaceAll(initLine, `"id":0`, `"id":"init-fz"`) + "\n" + initializedLine + "\n")
		in = append(append(in, line...), "\n"+`{"jsonrpc":"2.0","id":"ping-fz","method":"ping"}`+"\n"...)
		out := &syncBuffer{b: new(bytes.Buffer)}
		served := make(chan error, 1)
		go func() { served <- s.ServeStdio(t.Context(), bytes.NewReader(in), out) }()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("ServeStdio: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("ServeStdio did not return after the end of input %q", line)
		}
		answers := map[string]int{}
		total := 0
		for _, l := range bytes.SplitAfter(out.bytes(), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method *string         `json:"method"`
			}
			if !utf8.Valid(l) || !json.Valid(l) || l[len(l)-1] != '\n' || json.Unmarshal(l, &m) != nil {
				t.Fatalf("output line is not one UTF-8 JSON-RPC line: %q (input %q)", l, line)
			}
			if m.Method == nil {
				answers[string(m.ID)]++
				total++
			}
		}
		if answers[`"init-fz"`] == 0 || answers[`"ping-fz"`] == 0 || total > 3 {
			t.Fatalf("input %q: answers by id %v; want initialize and ping answered, and at most one answer to the line", line, answers)
		}
	})
}

// TestStdioCancelMappedID: a cancellation names a request by the id the
// client gave it, also when the proxy swapped that id for the SDK: cancelling
// 1.5 cancels the request 1.5, not the request 1 (which the SDK would read
// 1.5 as).
func TestStdioCancelMappedID(t *testing.T) {
	started := make(chan string, 4)
	cancelled := make(chan string, 4)
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "0"}, nil)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "slow://{x}", Name: "slow"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			started <- req.Params.URI
			<-ctx.Done()
			cancelled <- req.Params.URI
			return nil, ctx.Err()
		})
	dial := inMemoryDial(t, srv)
	s := startedServer(t, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "slow", Dial: dial}, Prefix: "slow"}}})
	rs := openRaw(t, s)
	rs.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"slow+slow://one"}}`)
	rs.send(`{"jsonrpc":"2.0","id":1.5,"method":"resources/read","params":{"uri":"slow+slow://onefive"}}`)
	for range 2 {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the reads did not reach the upstream")
		}
	}
	rs.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}`)
	select {
	case uri := <-cancelled:
		if uri != "slow://onefive" {
			t.Errorf("cancelling request 1.5 cancelled the read of %s, want slow://onefive", uri)
		}
	case <-time.After(20 * time.Second):
		t.Error("cancelling request 1.5 cancelled nothing")
	}
	rs.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Error("cancelling request 1 cancelled nothing")
	}
}

// startedServer is New(opts), started, with its upstreams' first start
// over, and closed when the test ends.
// inMemoryDial returns an upstream Dial that connects a new session of srv
// in memory, closed at the end of the test.
func inMemoryDial(t testing.TB, srv *mcp.Server) func(context.Context) (mcp.Transport, error) {
	return func(context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ct, nil
	}
}

func startedServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	return s
}

// BenchmarkStdioCall is one tools/call over stdio, in process (an in-memory
// upstream, a raw client on pipes), answered by the lean path, for a client
// of each era, with a result of 4 KiB of text: allocations per call, which
// do not depend on the machine's load, are the before/after figure of the
// stdio face.
func BenchmarkStdioCall(b *testing.B) {
	args := `{"text":"` + strings.Repeat("y", 4096) + `"}`
	for _, version := range []string{"2025-11-25", era.Version} {
		b.Run(version, func(b *testing.B) {
			s := startedServer(b, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "lean", Dial: leanUpstream(b)}, Prefix: "lean"}}})
			cr, pw := io.Pipe()
			pr, cw := io.Pipe()
			go func() { _ = s.ServeStdio(b.Context(), pr, pw); pw.Close() }()
			b.Cleanup(func() { cw.Close() })
			br := bufio.NewReaderSize(cr, 1<<20)
			// A raw client: what is measured is the proxy's side.
			ask := func(line string) []byte {
				if _, err := io.WriteString(cw, line+"\n"); err != nil {
					b.Fatal(err)
				}
				out, err := br.ReadBytes('\n')
				if err != nil {
					b.Fatal(err)
				}
				return out
			}
			meta := ""
			if version == era.Version {
				meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}`
			} else {
				ask(initLine)
				if _, err := io.WriteString(cw, initializedLine+"\n"); err != nil {
					b.Fatal(err)
				}
			}
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lean__echo","arguments":` + args + meta + `}}`
			for range 3 { // the first modern request sets the session up on the SDK's path
				if out := ask(call); !bytes.Contains(out, []byte(`"echo {`)) {
					b.Fatalf("tools/call: %s", out)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				ask(call)
			}
		})
	}
}
