package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tagged returns the tagged id (JSON) of raw for replica.
func tagged(replica, raw string) string { return string(TagID(replica, []byte(raw))) }

// TestTagRequests: the ids of requests in SSE events and JSON bodies are
// tagged with the replica; responses, notifications and the priming event
// are written unchanged; a notifications/cancelled names the tagged id.
func TestTagRequests(t *testing.T) {
	const r = "0a1b2c3d4e5f6071"
	tests := []struct {
		name, in, want string
	}{
		{name: "sse request",
			in:   "event: message\nid: _3\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"elicitation/create\",\"params\":{\"message\":\"id\"}}\n\n",
			want: "event: message\nid: _3\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + tagged(r, "3") + ",\"method\":\"elicitation/create\",\"params\":{\"message\":\"id\"}}\n\n"},
		{name: "string id with escapes",
			in:   `{"id":"a\"b\\","method":"roots/list"}`,
			want: `{"id":` + tagged(r, `"a\"b\\"`) + `,"method":"roots/list"}`},
		{name: "id after method, spaces",
			in:   `{ "method" : "sampling/createMessage" , "id" : 12 , "params" : {} }`,
			want: `{ "method" : "sampling/createMessage" , "id" : ` + tagged(r, "12") + ` , "params" : {} }`},
		{name: "response untouched",
			in:   "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"method\":\"x\"}}\n\n",
			want: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"method\":\"x\"}}\n\n"},
		{name: "notification untouched",
			in:   "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"id\":1}}\n\n",
			want: "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"id\":1}}\n\n"},
		{name: "null id untouched",
			in:   `{"id":null,"method":"x"}`,
			want: `{"id":null,"method":"x"}`},
		{name: "priming event untouched",
			in:   "event: prime\nid: _0\ndata: \n\n",
			want: "event: prime\nid: _0\ndata: \n\n"},
		{name: "cancelled names the tagged id",
			in:   `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gone"}}`,
			want: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + tagged(r, "7") + `,"reason":"gone"}}`},
		{name: "batch",
			in:   `[{"id":1,"result":{}},{"id":2,"method":"roots/list"},{"method":"notifications/x"}]`,
			want: `[{"id":1,"result":{}},{"id":` + tagged(r, "2") + `,"method":"roots/list"},{"method":"notifications/x"}]`},
		{name: "two events in one write",
			in:   "data: {\"id\":1,\"method\":\"a\"}\n\ndata: {\"id\":2,\"method\":\"b\"}\n\n",
			want: "data: {\"id\":" + tagged(r, "1") + ",\"method\":\"a\"}\n\ndata: {\"id\":" + tagged(r, "2") + ",\"method\":\"b\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(TagRequests([]byte(tt.in), r))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TagRequests (-want +got):\n%s", diff)
			}
			if strings.HasPrefix(tt.in, "{") && !json.Valid([]byte(got)) {
				t.Errorf("tagged JSON is not valid: %s", got)
			}
		})
	}
}

// TestRouteAnswers: an answer whose tagged id names this replica gets its
// id back in place; one naming another is taken out, its id restored;
// requests, notifications and ids not in the tagged form pass unchanged,
// and malformed tagged ids are never routed.
func TestRouteAnswers(t *testing.T) {
	const me, other = "aaaa", "bbbb"
	type routed struct {
		Rest   string
		Others map[string][]string
	}
	tests := []struct {
		name, in string
		want     routed
	}{
		{name: "mine", in: `{"jsonrpc":"2.0","id":` + tagged(me, "3") + `,"result":{"action":"accept"}}`,
			want: routed{Rest: `{"jsonrpc":"2.0","id":3,"result":{"action":"accept"}}`}},
		{name: "mine, string id with escapes", in: `{"id":` + tagged(me, `"q\"1\u00e9"`) + `,"error":{"code":1,"message":"no"}}`,
			want: routed{Rest: `{"id":"q\"1\u00e9","error":{"code":1,"message":"no"}}`}},
		{name: "mine, escaped in the client's encoding", in: `{"id":"mr.aaaa.` + `\u004dw","result":{}}`,
			want: routed{Rest: `{"id":3,"result":{}}`}},
		{name: "mine, every character escaped", in: `{"id":"` + escapeAll("mr.aaaa.Mw") + `","result":{}}`,
			want: routed{Rest: `{"id":3,"result":{}}`}},
		{name: "other's", in: `{"jsonrpc":"2.0","id":` + tagged(other, "5") + `,"result":{}}`,
			want: routed{Others: map[string][]string{other: {`{"jsonrpc":"2.0","id":5,"result":{}}`}}}},
		{name: "a request with a tagged id is the client's own", in: `{"id":` + tagged(other, "5") + `,"method":"tools/list"}`,
			want: routed{Rest: `{"id":` + tagged(other, "5") + `,"method":"tools/list"}`}},
		{name: "plain ids", in: `{"id":"mr","result":{}}`, want: routed{Rest: `{"id":"mr","result":{}}`}},
		{name: "bad base64", in: `{"id":"mr.bbbb.!!","result":{}}`, want: routed{Rest: `{"id":"mr.bbbb.!!","result":{}}`}},
		{name: "original not a number or string", in: `{"id":"mr.bbbb.e30","result":{}}`,
			want: routed{Rest: `{"id":"mr.bbbb.e30","result":{}}`}},
		{name: "replica with odd characters", in: `{"id":"mr.B/B.Mw","result":{}}`, want: routed{Rest: `{"id":"mr.B/B.Mw","result":{}}`}},
		{name: "empty replica", in: `{"id":"mr..Mw","result":{}}`, want: routed{Rest: `{"id":"mr..Mw","result":{}}`}},
		{name: "too long", in: `{"id":"mr.bbbb.` + strings.Repeat("M", 200) + `","result":{}}`,
			want: routed{Rest: `{"id":"mr.bbbb.` + strings.Repeat("M", 200) + `","result":{}}`}},
		{name: "batch split",
			in: `[{"id":` + tagged(me, "1") + `,"result":{}},{"id":` + tagged(other, "2") + `,"result":{}},{"id":9,"method":"ping"}]`,
			want: routed{Rest: `[{"id":1,"result":{}},{"id":9,"method":"ping"}]`,
				Others: map[string][]string{other: {`{"id":2,"result":{}}`}}}},
		{name: "batch all elsewhere",
			in:   `[{"id":` + tagged(other, "1") + `,"result":{}},{"id":` + tagged("cccc", "2") + `,"result":{}}]`,
			want: routed{Others: map[string][]string{other: {`{"id":1,"result":{}}`}, "cccc": {`{"id":2,"result":{}}`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, others := RouteAnswers([]byte(tt.in), me)
			got := routed{Rest: string(rest)}
			for _, a := range others {
				if got.Others == nil {
					got.Others = map[string][]string{}
				}
				got.Others[a.Replica] = append(got.Others[a.Replica], string(a.Msg))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RouteAnswers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTagRoundTrip: what a replica tags, a client echoes and RouteAnswers
// restores to the bytes the SDK wrote, for numbers and strings.
func TestTagRoundTrip(t *testing.T) {
	for _, id := range []string{"0", "-1", "9007199254740993", "1.5e3", `""`, `"x"`, `"\u2028\\\"."`, `"mr.aaaa.Mw"`} {
		req := TagRequests([]byte(`{"id":`+id+`,"method":"elicitation/create"}`), "aaaa")
		s, e, _ := MemberSpan(req, "id")
		var echoed string
		if err := json.Unmarshal(req[s:e], &echoed); err != nil {
			t.Fatalf("id %s: tagged id %s is not a string: %v", id, req[s:e], err)
		}
		answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": echoed, "result": map[string]any{}})
		rest, others := RouteAnswers(answer, "aaaa")
		if len(others) != 0 {
			t.Fatalf("id %s: routed elsewhere: %v", id, others)
		}
		if s, e, _ := MemberSpan(rest, "id"); string(rest[s:e]) != id {
			t.Errorf("id %s came back as %s", id, rest[s:e])
		}
	}
}

// TestIsAnswer: only one JSON-RPC response is injected into a session.
func TestIsAnswer(t *testing.T) {
	for in, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                   true,
		`{"jsonrpc":"2.0","id":"a","error":{"code":1}}`:          true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`:         false,
		`{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call"}`:    false,
		`{"jsonrpc":"2.0","id":null,"result":{}}`:                false,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`:        false,
		`{"jsonrpc":"2.0","id":1}`:                               false,
		`[{"jsonrpc":"2.0","id":1,"result":{}}]`:                 false,
		`{"jsonrpc":"2.0","id":1,"result":{}} trailing`:          false,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`: false,
	} {
		if got := IsAnswer([]byte(in)); got != want {
			t.Errorf("IsAnswer(%s) = %v, want %v", in, got, want)
		}
	}
}

// escapeAll writes every character of s as a \uXXXX escape.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// FuzzAnswerIDs: on any input neither direction panics; on valid JSON both
// keep it valid, and an id tagged for this replica comes back as written.
func FuzzAnswerIDs(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{}}`,
		`[{"id":"x","method":"roots/list"},{"id":1,"result":{}}]`,
		`{"method":"notifications/cancelled","params":{"requestId":"a\"b"}}`,
		`{"id":"mr.aaaa.Mw","result":{}}`,
		`{"id":"mr.bbbb.Mw","error":{"code":1,"message":"x"}}`,
		`{"id":{"method":1},"method":"x"}`,
		`{"id`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tagged := TagRequests(b, "aaaa")
		rest, others := RouteAnswers(b, "aaaa")
		if !json.Valid(b) {
			return
		}
		if !json.Valid(tagged) {
			t.Fatalf("TagRequests(%s) = %s, not JSON", b, tagged)
		}
		if rest != nil && !json.Valid(rest) {
			t.Fatalf("RouteAnswers(%s) left %s, not JSON", b, rest)
		}
		for _, a := range others {
			if !json.Valid(a.Msg) {
				t.Fatalf("RouteAnswers(%s) relays %s, not JSON", b, a.Msg)
			}
		}
	})
}
