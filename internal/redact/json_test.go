package redact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJSON: a known secret that an upstream echoes is masked in every string
// of a JSON value, in every spelling an encoder gives it (as is, escaped by
// Go, PHP or Python, percent-encoded, JSON-in-JSON), also as a key and in a
// number; shapes are content and stay; a value without a secret is returned
// as is.
func TestJSON(t *testing.T) {
	r := New("plain-secret-1", `quo"te\secret`, "sl/ash/secret", "ünï-cödé-secret", "123456789", "short")
	tests := []struct {
		name, in, want string
	}{
		{"no secret", `{"content":[{"type":"text","text":"hello"}],"n":1.50}`, `{"content":[{"type":"text","text":"hello"}],"n":1.50}`},
		{"text", `{"content":[{"type":"text","text":"token plain-secret-1 here"}]}`, `{"content":[{"text":"token [redacted] here","type":"text"}]}`},
		{"structured", `{"structuredContent":{"env":{"TOKEN":"plain-secret-1"}},"n":1.50}`, `{"n":1.50,"structuredContent":{"env":{"TOKEN":"[redacted]"}}}`},
		{"key", `{"plain-secret-1":true}`, `{"[redacted]":true}`},
		{"quote and backslash", `{"text":"a quo\"te\\secret b"}`, `{"text":"a [redacted] b"}`},
		{"json in json", `{"text":"{\"k\":\"quo\\\"te\\\\secret\"}"}`, `{"text":"{\"k\":\"[redacted]\"}"}`},
		{"escaped slash", `{"text":"sl\/ash\/secret"}`, `{"text":"[redacted]"}`},
		{"ascii escapes", `{"text":"\u00fcn\u00ef-c\u00f6d\u00e9-secret"}`, `{"text":"[redacted]"}`},
		{"percent-encoded", `{"uri":"https://x/?t=sl%2Fash%2Fsecret"}`, `{"uri":"https://x/?t=[redacted]"}`},
		{"number", `{"code":123456789,"other":12}`, `{"code":"[redacted]","other":12}`},
		{"shapes stay", `{"text":"Bearer sk-abcdefghijklmnopqrstuvwxyz"}`, `{"text":"Bearer sk-abcdefghijklmnopqrstuvwxyz"}`},
		{"short values are not secrets", `{"text":"short"}`, `{"text":"short"}`},
		{"html is not escaped", `{"text":"<b>plain-secret-1</b> & more"}`, `{"text":"<b>[redacted]</b> & more"}`},
		{"not json", `oops plain-secret-1 "sl\/ash\/secret`, `oops [redacted] "[redacted]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(r.JSON([]byte(tt.in)))); diff != "" {
				t.Errorf("JSON(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	var nilR *Redactor
	if got := string(nilR.JSON([]byte(`"plain-secret-1"`))); got != `"plain-secret-1"` {
		t.Errorf("nil Redactor: JSON = %s", got)
	}
}

// TestJSONNoSecretIsFree: a value without a secret comes back as the same
// bytes, with no allocation.
func TestJSONNoSecretIsFree(t *testing.T) {
	r := New(benchSecrets(10)...)
	raw := benchResult(1 << 10)
	if got := r.JSON(raw); &got[0] != &raw[0] {
		t.Error("JSON copied a value that holds no secret")
	}
	if n := testing.AllocsPerRun(100, func() { r.JSON(raw) }); n != 0 {
		t.Errorf("JSON allocates %v times on a value without a secret, want 0", n)
	}
}

// TestJSONAfterAdd: secrets added later (a reload) are masked from then on.
func TestJSONAfterAdd(t *testing.T) {
	r := New("first-secret")
	raw := []byte(`{"text":"first-secret second-secret"}`)
	r.Add("second-secret")
	if got, want := string(r.JSON(raw)), `{"text":"[redacted] [redacted]"}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func benchSecrets(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s3cr3t-%02d-%s", i, strings.Repeat("k", 24))
	}
	return out
}

// benchResult is a tools/call result with about size bytes of text.
func benchResult(size int) []byte {
	b, _ := json.Marshal(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": strings.Repeat("lorem ipsum dolor sit amet, ", size/28+1)[:size]}},
		"structuredContent": map[string]any{"ok": true, "count": 3},
	})
	return b
}

// BenchmarkJSON measures the masking of a tools/call result on the lean path
// with 10 known secrets: the common case (no secret: a search per secret)
// and the rare one (a secret echoed: decode, mask, encode).
func BenchmarkJSON(b *testing.B) {
	r := New(benchSecrets(10)...)
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		raw := benchResult(size)
		b.Run(fmt.Sprintf("none/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				r.JSON(raw)
			}
		})
		hit := []byte(strings.Replace(string(raw), "lorem", benchSecrets(10)[9], 1))
		b.Run(fmt.Sprintf("echoed/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(hit)))
			for b.Loop() {
				r.JSON(hit)
			}
		})
	}
}
