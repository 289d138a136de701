package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// attackAnswer is the short form of one stdout line.
type attackAnswer struct {
	ID   string // raw JSON
	Code int64  // 0 for a result
}

// collect reads stdout until the response to id and returns every other
// response seen on the way, checking that each line is valid UTF-8 and one
// JSON-RPC message.
func (r *rawStdio) collect(t *testing.T, id string) (rawMessage, []attackAnswer) {
	t.Helper()
	var others []attackAnswer
	deadline := time.After(testTimeout)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("stdout ended (manifold exited?) before the response to id %s; other answers: %v", id, others)
			}
			if !utf8.Valid(line) {
				t.Fatalf("stdout line is not UTF-8: %q", line)
			}
			m, err := parseFrame(line)
			if err != nil {
				t.Fatalf("stdout line %q: %v", line, err)
			}
			if m.Method != "" {
				continue // the proxy's own notifications
			}
			if string(m.ID) == id {
				return m, others
			}
			a := attackAnswer{ID: string(m.ID)}
			if len(m.Error) > 0 {
				var e struct {
					Code int64 `json:"code"`
				}
				if err := json.Unmarshal(m.Error, &e); err != nil {
					t.Fatalf("error object %s: %v", m.Error, err)
				}
				a.Code = e.Code
			}
			others = append(others, a)
		case <-deadline:
			t.Fatalf("no response to id %s within %s; other answers: %v", id, testTimeout, others)
		}
	}
}

func rawInit(t *testing.T, r *rawStdio) {
	t.Helper()
	r.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attack","version":"0"}}}`)
	if m, _ := r.collect(t, `"init"`); len(m.Result) == 0 {
		t.Fatalf("initialize: %s", m.Error)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestAttackStdioFrames drives the built binary with every kind of bad line
// on stdin: each is answered as JSON-RPC prescribes (or, for a response,
// not at all), ids come back exactly as sent, stdout stays UTF-8 JSON-RPC,
// and a good tools/call after each bad line is still answered.
func TestAttackStdioFrames(t *testing.T) {
	t.Parallel()
	r := startRaw(t, writeConfig(t, fixture("alpha", nil)))
	rawInit(t, r)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	const pe, ir = -32700, -32600
	tests := []struct {
		name string
		line string
		want []attackAnswer
	}{
		{"invalid JSON", `{"jsonrpc":`, []attackAnswer{{"null", pe}}},
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, []attackAnswer{{"null", pe}}},
		{"plain text", `hello world`, []attackAnswer{{"null", pe}}},
		{"binary bytes", "\x00\x01\x02\xff\xfe", []attackAnswer{{"null", pe}}},
		{"UTF-8 BOM", "\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`, []attackAnswer{{"null", pe}}},
		{"trailing garbage", `{"jsonrpc":"2.0","id":3,"method":"ping"}xyz`, []attackAnswer{{"null", pe}}},
		{"two frames on one line", `{"jsonrpc":"2.0","id":4,"method":"ping"}{"jsonrpc":"2.0","id":5,"method":"ping"}`, []attackAnswer{{"null", pe}}},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":6,"method":"ping"}`, []attackAnswer{{"6", ir}}},
		{"jsonrpc missing", `{"id":7,"method":"ping"}`, []attackAnswer{{"7", ir}}},
		{"method a number", `{"jsonrpc":"2.0","id":8,"method":5}`, []attackAnswer{{"8", ir}}},
		{"empty array", `[]`, []attackAnswer{{"null", ir}}},
		{"array of numbers", `[1,2,3]`, []attackAnswer{{"null", ir}}},
		{"batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":10,"method":"ping"}]`, []attackAnswer{{"null", ir}}},
		{"batch with a duplicate id", `[{"jsonrpc":"2.0","id":11,"method":"ping"},{"jsonrpc":"2.0","id":11,"method":"ping"}]`, []attackAnswer{{"null", ir}}},
		{"bare string", `"tools/list"`, []attackAnswer{{"null", ir}}},
		{"null", `null`, []attackAnswer{{"null", ir}}},
		{"id an object", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, []attackAnswer{{"null", ir}}},
		{"id an array", `{"jsonrpc":"2.0","id":[12],"method":"ping"}`, []attackAnswer{{"null", ir}}},
		{"id true", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, []attackAnswer{{"null", ir}}},
		{"100000 levels in params", `{"jsonrpc":"2.0","id":13,"method":"ping","params":{"a":` + deep(100000) + `}}`, []attackAnswer{{"null", ir}}},
		{"100000 levels in arguments", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":` + deep(100000) + `}}}`, []attackAnswer{{"null", ir}}},
		{"non-UTF-8 id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"ping\"}", []attackAnswer{{"null", pe}}},
		{"METHOD in capitals", `{"jsonrpc":"2.0","id":15,"METHOD":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`, []attackAnswer{{"15", ir}}},
		{"duplicate method", `{"jsonrpc":"2.0","id":16,"method":"ping","method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`, []attackAnswer{{"16", ir}}},
		{"malformed response", `{"jsonrpc":"2.0","id":17,"error":"x"}`, nil},
		{"id 1.5 (SDK path)", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, []attackAnswer{{"1.5", 0}}},
		{"id 1.5 (lean path)", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`, []attackAnswer{{"1.5", 0}}},
		{"30-digit id (SDK path)", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list"}`, []attackAnswer{{"123456789012345678901234567890", 0}}},
		{"30-digit id (lean path)", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`, []attackAnswer{{"123456789012345678901234567890", 0}}},
		{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, []attackAnswer{{"1e400", 0}}},
		{"id 2^53+1 (SDK path)", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, []attackAnswer{{"9007199254740993", 0}}},
		{"largest int64 id (lean path)", `{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`, []attackAnswer{{"9223372036854775807", 0}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.send(t, tt.line)
			good := fmt.Sprintf(`"good-%d"`, i)
			r.send(t, `{"jsonrpc":"2.0","id":`+good+`,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"still here"}}}`)
			m, others := r.collect(t, good)
			if !strings.Contains(string(m.Result), "alpha: still here") {
				t.Errorf("good call after the bad line: result %s, error %s", m.Result, m.Error)
			}
			// A lean answer may come after the good call's.
			for len(others) < len(tt.want) {
				r.send(t, `{"jsonrpc":"2.0","id":"more","method":"ping"}`)
				_, more := r.collect(t, `"more"`)
				others = append(others, more...)
			}
			if diff := cmp.Diff(tt.want, others); diff != "" {
				t.Errorf("answers to %.60q (-want +got):\n%s", tt.line, diff)
			}
		})
	}

	t.Run("100 MiB frame", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":"`+strings.Repeat("x", 100<<20)+`"}}`+"\n")
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writing the frame: %v", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("manifold stopped reading stdin")
		}
		r.send(t, `{"jsonrpc":"2.0","id":"after-huge","method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`)
		_, others := r.collect(t, `"after-huge"`)
		if diff := cmp.Diff([]attackAnswer{{"null", ir}}, others); diff != "" {
			t.Errorf("answers to a 100 MiB frame (-want +got):\n%s", diff)
		}
	})
}

// TestAttackStdioEOF: a final request without a newline, and a tools/call
// followed at once by the end of input, are answered before manifold exits.
func TestAttackStdioEOF(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("alpha", nil))
	for _, tt := range []struct{ name, last, id string }{
		{"tools/call then EOF", `{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}` + "\n", `"last"`},
		{"tools/call without newline", `{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"x"}}}`, `"last"`},
		{"tools/list without newline", `{"jsonrpc":"2.0","id":"last","method":"tools/list"}`, `"last"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := startRaw(t, cfg)
			rawInit(t, r)
			if _, err := io.WriteString(r.stdin, tt.last); err != nil {
				t.Fatal(err)
			}
			r.stdin.Close()
			m, _ := r.collect(t, tt.id)
			if len(m.Result) == 0 {
				t.Errorf("answer to the last request: error %s, want a result", m.Error)
			}
		})
	}
}

// TestAttackUpstreamGarbage: an upstream that writes batches, responses to
// ids it was never sent, case-variant and duplicate keys, deep nesting,
// invalid UTF-8 and trailing blanks around every frame keeps its session:
// its tools list and answer, and the garbage is logged.
func TestAttackUpstreamGarbage(t *testing.T) {
	t.Parallel()
	sp := startStdio(t, writeConfig(t, fixture("alpha", nil)+fixture("junk", []string{"-mode", "garbage"})))
	ctx := testCtx(t)
	res, err := sp.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "junk__echo") {
		t.Fatalf("tools/list lacks junk__echo: %v\nstderr:\n%s", names, sp.stderr)
	}
	for i := range 5 {
		r, err := sp.cs.CallTool(ctx, &mcp.CallToolParams{Name: "junk__echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
		if err != nil || r.IsError || len(r.Content) != 1 {
			t.Fatalf("call %d: %v %+v\nstderr:\n%s", i, err, r, sp.stderr)
		}
		if text := r.Content[0].(*mcp.TextContent).Text; text != fmt.Sprintf("junk: %d", i) {
			t.Errorf("call %d: %q, want %q", i, text, fmt.Sprintf("junk: %d", i))
		}
	}
	if _, err := sp.cs.ListPrompts(ctx, nil); err != nil {
		t.Errorf("prompts/list through the SDK path: %v", err)
	}
	logs := sp.stderr.String()
	for _, want := range []string{"never sent", "upstream=junk"} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "exited") || strings.Contains(logs, "restart") {
		t.Errorf("the garbage upstream's session ended:\n%s", logs)
	}
}
