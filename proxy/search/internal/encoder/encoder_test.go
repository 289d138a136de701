package encoder

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reference is a file of ref.js (internal/genuse): TF.js's own tokenizer and
// graph model run on the sentences of internal/genuse/sentences.txt.
type reference struct {
	Model     string
	Sentences []struct {
		Text   string
		IDs    []int32
		Vector []float32
	}
}

func loadReference(t *testing.T, name string) reference {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
	if len(r.Sentences) < 20 {
		t.Fatalf("testdata/%s: %d sentences, want 20 or more", name, len(r.Sentences))
	}
	return r
}

func defaultModel(t *testing.T) *Model {
	t.Helper()
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// minCosine is the lowest cosine between m's embedding of each reference
// sentence (from the reference's ids) and the reference's, or the first
// below stop.
func minCosine(m *Model, r reference, stop float64) (float64, string) {
	low, which := 2.0, ""
	for _, s := range r.Sentences {
		if c := cosine(m.EncodeIDs(s.IDs), s.Vector); c < low {
			low, which = c, s.Text
			if low < stop {
				break
			}
		}
	}
	return low, which
}

// sameWeights is the least cosine of the Go and TF.js forward passes on the
// same weights: they differ by float32 rounding only (1 − 1e-9 measured).
const sameWeights = 0.999999

func TestTokenizeMatchesReference(t *testing.T) {
	m := defaultModel(t)
	for _, s := range loadReference(t, "reference.json").Sentences {
		if diff := cmp.Diff(s.IDs, m.Tokenize(s.Text)); diff != "" {
			t.Errorf("Tokenize(%q) (-TF.js +ours):\n%s", s.Text, diff)
		}
	}
}

// TestEncodeMatchesReference compares the Go forward pass with TF.js's on
// the same weights: reference_int8.json is the graph model run on the
// decoded int8 weights of model.bin (genuse -dequantised), so the two must
// agree to float rounding; reference.json is it on the package's float32
// weights, which the int8 quantisation must keep close.
func TestEncodeMatchesReference(t *testing.T) {
	m := defaultModel(t)
	if low, which := minCosine(m, loadReference(t, "reference_int8.json"), -1); low < sameWeights {
		t.Errorf("cosine with TF.js on the same weights %.7f for %q, want ≥ %v", low, which, sameWeights)
	}
	if low, which := minCosine(m, loadReference(t, "reference.json"), -1); low < 0.998 {
		t.Errorf("cosine with TF.js on the float32 weights %.6f for %q, want ≥ 0.998", low, which)
	}
	for _, s := range loadReference(t, "reference.json").Sentences {
		v := m.Encode(s.Text)
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if len(v) != Dims || math.Abs(norm-1) > 1e-4 {
			t.Errorf("Encode(%q): %d values of norm² %.6f, want %d at unit length", s.Text, len(v), norm, Dims)
		}
	}
}

// TestReferenceCatchesOneWrongWeight checks that the comparison above can
// fail: one weight changed in a copy of the model takes some sentence below
// the threshold.
func TestReferenceCatchesOneWrongWeight(t *testing.T) {
	r := loadReference(t, "reference_int8.json")
	for _, tc := range []struct {
		name   string
		break_ func(w *weights)
	}{
		{"a layer-norm scale of layer 1", func(w *weights) { w.layers[1].ln1Scale[7] = -w.layers[1].ln1Scale[7] }},
		{"a bias of the tanh layer", func(w *weights) { w.tanhBias[100] += 0.5 }},
		{"an inverse timescale", func(w *weights) { w.timing[3] *= 1.5 }},
		{"one int8 of layer 0's query/key/value matrix", func(w *weights) {
			q := []byte(w.layers[0].qkv.q)
			q[5*768+7] = byte(-int8(q[5*768+7]) + 40)
			w.layers[0].qkv.q = string(q)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(modelBin)
			if err != nil {
				t.Fatal(err)
			}
			m.w.timing = slices.Clone(m.w.timing)
			tc.break_(&m.w)
			if low, _ := minCosine(m, r, sameWeights); low >= sameWeights {
				t.Errorf("with %s wrong the lowest cosine is %.7f, still ≥ %v", tc.name, low, sameWeights)
			}
		})
	}
}

func TestDecodeRejectsBadModels(t *testing.T) {
	good := modelBin
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "not an encoder model"},
		{"foreign", "MFWV1\n" + good[7:], "not an encoder model"},
		{"truncated vocabulary", good[:100], "truncated"},
		{"truncated weights", good[:len(good)-1], "truncated"},
		{"an extra byte", good + "x", "1 bytes after the last tensor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode: error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestTokenizeEdgeCases(t *testing.T) {
	m := defaultModel(t)
	if got := m.Tokenize(""); len(got) != 0 {
		t.Errorf("Tokenize(\"\") = %v, want none", got)
	}
	// Unknown characters in a row are one unknown piece.
	if got := m.Tokenize("検索検索"); len(got) != 2 || got[1] != 0 {
		t.Errorf("Tokenize(検索検索) = %v, want ▁ and one unknown piece", got)
	}
	// Folded compatibility characters tokenize as their plain forms.
	if diff := cmp.Diff(m.Tokenize("read a file..."), m.Tokenize("read\u00a0a ｆｉｌｅ…")); diff != "" {
		t.Errorf("folded text tokenizes differently (-plain +folded):\n%s", diff)
	}
	// Past 128 pieces the model does not look.
	long := strings.Repeat("word ", 130)
	if c := cosine(m.Encode(long), m.Encode(long+"and something else entirely")); c < 0.999999 {
		t.Errorf("text past 128 pieces changed the embedding (cosine %.6f)", c)
	}
	if v := m.EncodeIDs([]int32{-1, 1 << 20}); len(v) != Dims {
		t.Errorf("EncodeIDs with ids out of range: %d values", len(v))
	}
}

// TestEncodeRanksByMeaning is the point of the model: a request is nearer a
// tool description that says the same in other words than an unrelated one.
func TestEncodeRanksByMeaning(t *testing.T) {
	m := defaultModel(t)
	for _, tc := range []struct{ query, near, far string }{
		{"remove a folder", "Delete a directory and everything in it", "Create a new calendar event"},
		{"grab a picture of the page", "Take a screenshot of the current browser tab", "List open pull requests"},
		{"what's the forecast", "Get the weather for a city", "Run a SQL query against the database"},
	} {
		q := m.Encode(tc.query)
		if near, far := cosine(q, m.Encode(tc.near)), cosine(q, m.Encode(tc.far)); near <= far {
			t.Errorf("%q: cosine with %q %.3f, not above %q %.3f", tc.query, tc.near, near, tc.far, far)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	m, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	text := "Take a screenshot of the current browser tab and save it as a PNG file in the downloads folder"
	b.ReportAllocs()
	for b.Loop() {
		m.Encode(text)
	}
}
