package search

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Knobs exposes the ranker's knobs to the evaluation (tuned on the dev split
// only).
type Knobs = options

// The fields of Options.Weights.
const (
	FieldName        = fieldName
	FieldTitle       = fieldTitle
	FieldDescription = fieldDescription
	FieldParams      = fieldParams
	FieldServer      = fieldServer
)

// DefaultKnobs are New's; SemanticKnobs NewWith's with Options.Semantic.
var DefaultKnobs, SemanticKnobs = defaultOptions, semanticOptions

// NewWithKnobs builds an index with other knobs.
func NewWithKnobs(docs []Doc, o Knobs) *Index { return build(docs, o) }

// NewWithKnobsEmbed builds an index with other knobs and an embedding
// function (Options.Embed).
func NewWithKnobsEmbed(docs []Doc, o Knobs, embed func(string) []float32) *Index {
	return buildWith(docs, o, embed)
}

// EmbedKnobs are NewWith's with Options.Semantic and Options.Embed.
var EmbedKnobs = func() Knobs {
	o := semanticOptions
	o.Embed, o.EmbedConf, o.MinConfidence = embedOptions.Embed, embedOptions.EmbedConf, embedOptions.MinConfidence
	return o
}()

// VectorsDecoded tells whether the word-vector table has been decoded in
// this process.
func VectorsDecoded() bool { return vectorsDecoded.Load() }

// Similarity is the cosine of two words' vectors in the embedded table (each
// stemmed as the analyser does), and whether both have one.
func Similarity(a, b string) (float64, bool) {
	va, vb := vectors().vector(stem(a)), vectors().vector(stem(b))
	if va == nil || vb == nil {
		return 0, false
	}
	return float64(dot(va, vb)), true
}

// NewPlainBM25 builds the evaluation's plain BM25 baseline: all fields as one,
// words split only at non-letters and case-folded, no field weights, stop
// words, stemming, phrases or synonyms, and a hit whenever a query word
// matches.
func NewPlainBM25(docs []Doc) *Index {
	return build(docs, options{Weights: [numFields]float64{fieldName: 1}, K1: 1.2, B: 0.75, Plain: true})
}

// Explain tells how a query is read: its words with their weight and
// document frequency. A tuning aid.
func (ix *Index) Explain(q string) string {
	var b strings.Builder
	for _, t := range ix.analyseQuery(q) {
		v := ""
		if t.role != roleWord {
			v = []string{"", " value", " name", " arg"}[t.role]
		}
		fmt.Fprintf(&b, "%s(w%.2f df%d%s) ", t.word, ix.weight(t), len(ix.postings[t.word]), v)
	}
	return b.String()
}

// Top returns the best doc for q and the confidence the no-match decision
// sees.
func (ix *Index) Top(q string) (id string, confidence float64) {
	r := ix.rank(q)
	if len(r.docs) == 0 {
		return "", 0
	}
	return ix.ids[r.docs[0]], r.confidence(ix.opt)
}

// ExplainDoc tells how each query word scores in the doc with that ID.
func (ix *Index) ExplainDoc(q, id string) string {
	d := slices.Index(ix.ids, id)
	if d < 0 {
		return "no doc " + id
	}
	var b strings.Builder
	for _, t := range ix.analyseQuery(q) {
		for _, w := range append([]string{t.word}, ix.synonyms[t.word]...) {
			for _, p := range ix.postings[w] {
				if int(p.doc) == d {
					fmt.Fprintf(&b, "%s:%s tfn%.2f idf%.2f ", t.word, w, p.tfn, ix.idf(len(ix.postings[w])))
				}
			}
		}
	}
	return b.String()
}

// Uncovered lists the query words the best doc does not match, directly or
// through a synonym.
func (ix *Index) Uncovered(q string) string {
	r := ix.rank(q)
	if len(r.docs) == 0 {
		return "-"
	}
	best := make([]float64, len(ix.ids))
	var b strings.Builder
	for _, t := range ix.analyseQuery(q) {
		clear(best)
		ix.match(t.word, math.Inf(1), 1, best)
		for _, s := range ix.synonyms[t.word] {
			ix.match(s, math.Inf(1), 1, best)
		}
		if best[r.docs[0]] == 0 {
			fmt.Fprintf(&b, "%s[%d] ", t.word, t.role)
		}
	}
	return b.String()
}

// DecodeVectors decodes the embedded table afresh (for its benchmark).
func DecodeVectors() {
	if _, err := decodeVectors(vectorsBin); err != nil {
		panic(err)
	}
}

// TopMean returns the best doc for q, the confidence, and the mean-vector
// cosine of the query with that doc (a tuning aid).
func (ix *Index) TopMean(q string) (id string, confidence, cos float64) {
	r := ix.rank(q)
	if len(r.docs) == 0 {
		return "", 0, 0
	}
	var ws []string
	for _, t := range ix.analyseQuery(q) {
		if t.role != roleValue {
			ws = append(ws, t.word)
		}
	}
	if qv := centred(meanVector(ws), ix.centre); qv != nil && ix.docVecs != nil && ix.docVecs[r.docs[0]] != nil {
		cos = float64(dot(qv, ix.docVecs[r.docs[0]]))
	}
	return ix.ids[r.docs[0]], r.confidence(ix.opt), cos
}

// WordnetDecoded tells whether the table of related forms has been decoded
// in this process.
func WordnetDecoded() bool { return wordnetDecoded.Load() }

// DecodeWordnet decodes the embedded table of related forms (for its
// benchmark).
func DecodeWordnet() map[string][]string {
	t, err := decodeWordnet(wordnetGz)
	if err != nil {
		panic(err)
	}
	return t
}
