package frame

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sdkEcho returns the id the SDK writes in its response to a request of id.
func sdkEcho(t *testing.T, id string) []byte {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
	if err != nil {
		t.Fatalf("decode a request of id %s: %v", id, err)
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("encode the answer to id %s: %v", id, err)
	}
	var r struct{ ID json.RawMessage }
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// TestNeedsMapping checks NeedsMapping against what the SDK echoes: an id
// it does not map is one the SDK answers with the same bytes, and ids in the
// proxy's own id space, numbers the SDK would spell otherwise and strings
// with escapes (which it may) are mapped, integers beyond 2^53 too: the
// SDK reads ids through float64 and would echo them rounded
// (9007199254740993 as 9007199254740992).
func TestNeedsMapping(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{`0`, false}, {`1`, false}, {`-7`, false}, {`9007199254740992`, false}, {`-9007199254740992`, false},
		{`1.5`, true}, {`1e2`, true}, {`1.0`, true}, {`-0`, true}, {`123456789012345678901234567890`, true},
		{`9007199254740993`, true}, {`-9007199254740993`, true}, {`9223372036854775807`, true}, {`-9223372036854775808`, true},
		{`"a"`, false}, {`""`, false}, {`"héllo"`, false}, {`"a/b"`, false}, {`"~mf"`, false},
		{`"a\"b"`, true}, {`"\u0041"`, true}, {`"a\/b"`, true}, {"\"a\u2028b\"", true}, {"\"a\u2029b\"", true},
		{MappedIDPrefix + `1"`, true},
	} {
		if got := NeedsMapping([]byte(tc.id)); got != tc.want {
			t.Errorf("NeedsMapping(%s) = %v, want %v", tc.id, got, tc.want)
		}
		if echo := sdkEcho(t, tc.id); !tc.want && !bytes.Equal(echo, []byte(tc.id)) {
			t.Errorf("id %s is not mapped, but the SDK answers it as %s", tc.id, echo)
		}
	}
}
