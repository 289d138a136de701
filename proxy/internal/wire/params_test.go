package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var paramsSeeds = []string{
	`{"name":"a__echo","arguments":{"message":"hi"}}`,
	` { "name" : "x" , "arguments" : [1,2] , "_meta" : {"progressToken":1} } `,
	`{"name":"first","name":"last"}`,
	`{"na\u006de":"escaped key","arguments":{}}`,
	`{"name":"é\u00e9 <&>","arguments":{"b":1e400,"n":[12345678901234567890,-0.0]}}`,
	`{}`,
	`null`,
	`{"name":"\"quoted\"","x":"\\\\"}`,
	`{"":1,"\u0000":2}`,
}

// TestSplitParams: the members found by scanning are those encoding/json
// decodes, byte for byte, and JoinParams puts them back into an object that
// decodes to the same members.
func TestSplitParams(t *testing.T) {
	for _, in := range paramsSeeds {
		checkSplitJoin(t, []byte(in))
	}
	for _, bad := range []string{`[1,2]`, `"name"`, `3`} {
		if _, err := SplitParams([]byte(bad)); err == nil {
			t.Errorf("SplitParams(%s): no error", bad)
		}
	}
}

func FuzzSplitParams(f *testing.F) {
	for _, s := range paramsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // the frame was checked first (Check)
		}
		checkSplitJoin(t, in)
	})
}

func checkSplitJoin(t *testing.T, in []byte) {
	t.Helper()
	want := map[string]json.RawMessage{}
	wantErr := json.Unmarshal(in, &want)
	got, err := SplitParams(in)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("SplitParams(%s): error %v, encoding/json says %v", in, err, wantErr)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("SplitParams(%s) (-encoding/json +scanned):\n%s", in, diff)
	}
	joined := JoinParams(got)
	back := map[string]json.RawMessage{}
	if err := json.Unmarshal(joined, &back); err != nil {
		t.Fatalf("JoinParams(%s) = %s, not JSON: %v", in, joined, err)
	}
	if diff := cmp.Diff(got, back); diff != "" {
		t.Fatalf("JoinParams(%s) = %s decodes otherwise (-split +joined):\n%s", in, joined, diff)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "files__read_text_file", "a\"b", `a\b`, "<&>", "é", "\u2028", "\x00", "tab\there"} {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Errorf("AppendString(%q) = %s, decodes to %q, %v", s, got, back, err)
		}
	}
}
