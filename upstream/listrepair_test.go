package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRepairList(t *testing.T) {
	tests := []struct {
		name, method, result string
		want                 string // "" = unchanged
		wantDropped          []string
	}{
		{name: "all good", method: "tools/list", result: `{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`},
		{name: "not a list method", method: "tools/call", result: `{"tools":[{"name":"a","annotations":"x"}]}`},
		{name: "no array", method: "tools/list", result: `{"tools":"x"}`},
		{
			name: "bad annotations and a null", method: "tools/list",
			result:      `{"tools":[{"name":"bad","annotations":"x"},null,{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"c"}`,
			want:        `{"nextCursor":"c","tools":[{"name":"a","inputSchema":{"type":"object"}}]}`,
			wantDropped: []string{"tools/list bad", "tools/list "},
		},
		{
			name: "prompt", method: "prompts/list", result: `{"prompts":[{"name":"p","arguments":"x"},{"name":"q"}]}`,
			want: `{"prompts":[{"name":"q"}]}`, wantDropped: []string{"prompts/list p"},
		},
		{
			name: "resource named by its URI", method: "resources/list", result: `{"resources":[{"uri":"x://bad","name":"n","size":"x"}]}`,
			want: `{"resources":[]}`, wantDropped: []string{"resources/list x://bad"},
		},
		{
			name: "too deep for the SDK", method: "tools/list",
			result:      `{"tools":[{"name":"deep","inputSchema":` + strings.Repeat(`{"a":`, 995) + "1" + strings.Repeat("}", 995) + `},{"name":"a"}]}`,
			want:        `{"tools":[{"name":"a"}]}`,
			wantDropped: []string{"tools/list deep"},
		},
		{
			name: "template", method: "resources/templates/list", result: `{"resourceTemplates":[7,{"uriTemplate":"x://{a}","name":"t"}]}`,
			want: `{"resourceTemplates":[{"uriTemplate":"x://{a}","name":"t"}]}`, wantDropped: []string{"resources/templates/list "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dropped []string
			got := repairList(tt.method, json.RawMessage(tt.result), func(method, item string, err error) {
				if err == nil {
					t.Errorf("drop %s %q without an error", method, item)
				}
				dropped = append(dropped, method+" "+item)
			})
			want := tt.want
			if want == "" {
				want = tt.result
			}
			if string(got) != want {
				t.Errorf("repairList = %s, want %s", got, want)
			}
			if diff := cmp.Diff(tt.wantDropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}

// badToolWriter inserts a tool with malformed annotations at the head of
// every tools/list result the server writes.
type badToolWriter struct{ http.ResponseWriter }

func (w badToolWriter) WriteHeader(code int) {
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(code)
}

func (w badToolWriter) Write(b []byte) (int, error) {
	out := bytes.Replace(b, []byte(`"tools":[`), []byte(`"tools":[{"name":"bad","inputSchema":{"type":"object"},"annotations":"x"},`), 1)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w badToolWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestMalformedListItemsRemote lists the tools of remote servers that put a
// tool with "annotations":"x" first, answering in JSON, in an SSE stream and
// over the SSE transport, and of an in-memory server: only that tool is
// left out, and it is logged.
func TestMalformedListItemsRemote(t *testing.T) {
	for _, tc := range []struct{ name, transport string }{
		{"streamable json", ""}, {"streamable sse", ""}, {"sse", "sse"}, {"in-memory", "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer()
			var logs logBuffer
			opts := Options{Name: "remote", Transport: tc.transport, StopGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			switch tc.transport {
			case "memory":
				opts.Transport = ""
				opts.Dial = func(ctx context.Context) (mcp.Transport, error) {
					ct, st := mcp.NewInMemoryTransports()
					if _, err := srv.Connect(ctx, badToolTransport{st}, nil); err != nil {
						return nil, err
					}
					return ct, nil
				}
			default:
				var handler http.Handler
				if tc.transport == "sse" {
					handler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
				} else {
					handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
						&mcp.StreamableHTTPOptions{JSONResponse: tc.name == "streamable json"})
				}
				ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					handler.ServeHTTP(badToolWriter{w}, r)
				}))
				t.Cleanup(ts.Close)
				opts.URL = ts.URL
			}
			u := start(t, opts)
			var names []string
			for tool, err := range u.Session().Tools(callCtx(t), nil) {
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				names = append(names, tool.Name)
			}
			if len(names) == 0 || slices.Contains(names, "bad") || !slices.Contains(names, "echo") {
				t.Errorf("tools = %q; want the server's tools without the malformed one", names)
			}
			recs := logs.records(t, "a listed item is malformed; it is left out and the rest of the list is served. Tell the server's maintainers")
			if len(recs) == 0 || recs[0]["item"] != "bad" || recs[0]["upstream"] != "remote" || recs[0]["list"] != "tools/list" {
				t.Errorf("log records of the malformed tool = %v; want one with upstream remote, list tools/list, item bad", recs)
			}
		})
	}
}

// badToolTransport is a server-side transport whose connection inserts a
// malformed tool into every tools/list result it writes.
type badToolTransport struct{ mcp.Transport }

func (t badToolTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return badToolConn{c}, nil
}

type badToolConn struct{ mcp.Connection }

func (c badToolConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && bytes.Contains(r.Result, []byte(`"tools":[`)) {
		r.Result = bytes.Replace(r.Result, []byte(`"tools":[`), []byte(`"tools":[{"name":"bad","inputSchema":{"type":"object"},"annotations":"x"},`), 1)
	}
	return c.Connection.Write(ctx, msg)
}

// TestSSERepair repairs the data line of a list response in an SSE stream
// and passes every other line through byte for byte, a line over the limit
// included.
func TestSSERepair(t *testing.T) {
	u := &Upstream{log: slog.New(slog.DiscardHandler)}
	bad := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"bad","annotations":"x"},{"name":"a","inputSchema":{"type":"object"}}]}}`
	long := "data: " + strings.Repeat("y", 300) + "\n"
	in := "event: message\nid: 1\ndata: " + bad + "\n\n: comment\r\n" + long + "data: " + bad
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(in))}
	u.repairBody("tools/list", resp, 200)
	got, err := io.ReadAll(iotest.OneByteReader(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	fixed := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}`
	// The last line has no newline: it is not a complete event line, so it is
	// passed through.
	want := "event: message\nid: 1\ndata: " + fixed + "\n\n: comment\r\n" + long + "data: " + bad
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("repaired stream (-want +got):\n%s", diff)
	}
}

// FuzzRepairList: whatever a server sends as a list result, a repaired
// result whose list is an array decodes as the SDK's result type with no
// nil item, and repairing it again changes nothing.
func FuzzRepairList(f *testing.F) {
	f.Add("tools/list", `{"tools":[{"name":"bad","annotations":"x"},null,{"name":"a"}]}`)
	f.Add("prompts/list", `{"prompts":[{"name":"p","arguments":"x"},{"name":"q"}],"nextCursor":"c"}`)
	f.Add("resources/list", `{"resources":[{"uri":"x://a","size":"x"},7]}`)
	f.Add("resources/templates/list", `{"resourceTemplates":[[],{"uriTemplate":"x://{a}"}]}`)
	f.Fuzz(func(t *testing.T, method, result string) {
		if _, ok := listMembers[method]; !ok {
			method = "tools/list"
		}
		out := repairList(method, json.RawMessage(result), func(string, string, error) {})
		var members map[string]json.RawMessage
		var items []json.RawMessage
		if json.Unmarshal(out, &members) != nil || json.Unmarshal(members[listMembers[method]], &items) != nil {
			return // not repairable: the SDK reports the whole result
		}
		if json.Unmarshal(out, &map[string]any{}) != nil {
			return
		}
		for _, it := range items {
			if err := decodeItem(method, it); err != nil || string(bytes.TrimSpace(it)) == "null" {
				t.Fatalf("repaired %s result %s still holds item %s (%v)", method, out, it, err)
			}
		}
		again := repairList(method, out, func(_, item string, err error) {
			t.Errorf("second repair dropped %q: %v", item, err)
		})
		if !bytes.Equal(again, out) {
			t.Errorf("second repair changed %s to %s", out, again)
		}
	})
}

// FuzzDecodesWhole: when a list decodes as a whole (repairList's way for a
// list with nothing to leave out), each of its items decodes alone, is not
// null and is not nested too deep: the item by item way would have left
// nothing out either.
func FuzzDecodesWhole(f *testing.F) {
	f.Add("tools/list", `[{"name":"bad","annotations":"x"},null,{"name":"a"}]`)
	f.Add("tools/list", `[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","annotations":{"readOnlyHint":true}}]`)
	f.Add("prompts/list", `[{"name":"p","arguments":"x"},{"name":"q"}]`)
	f.Add("resources/list", `[{"uri":"x://a","size":"x"},7]`)
	f.Add("resources/templates/list", `[[],{"uriTemplate":"x://{a}"}]`)
	f.Add("tools/list", `null`)
	f.Add("tools/list", `[]`)
	f.Fuzz(func(t *testing.T, method, list string) {
		if _, ok := listMembers[method]; !ok {
			method = "tools/list"
		}
		if !decodesWhole(method, json.RawMessage(list)) {
			return
		}
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(list), &items); err != nil {
			t.Fatalf("%s %s decodes whole, but not as an array: %v", method, list, err)
		}
		for _, it := range items {
			if err := decodeItem(method, it); err != nil || string(bytes.TrimSpace(it)) == "null" || nesting(it) > maxItemDepth {
				t.Fatalf("%s %s decodes whole, but item %s does not (%v)", method, list, it, err)
			}
		}
	})
}
