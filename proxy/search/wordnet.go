package search

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// wordnetGz is the table of derivationally related forms of the query
// expansion (options.Related): for 7,974 of the 30,000 frequent words of
// vectors.bin, the words WordNet 3.0 derives from or to them ("reviewer
// review", "translation translate"), one line "word rel rel …", gzip'd;
// 52,737 bytes. internal/genwn writes it from Debian's wordnet-base (its doc has
// the command); WORDNET-LICENSE has the licence. It is generic English: no
// word was chosen from a catalog or a query.
//
//go:embed wordnet.txt.gz
var wordnetGz []byte

// wordnetDecoded tells whether the table has been decoded in this process.
var wordnetDecoded atomic.Bool

// wordnet decodes the embedded table once, on first use (about 0.8 MB of
// heap, 20 ms), into analysed words: stem(word) → the stems of its related
// words, its own and stop words left out. Only an index with
// options.Related calls it.
var wordnet = sync.OnceValue(func() map[string][]string {
	t, err := decodeWordnet(wordnetGz)
	if err != nil {
		// The table is part of the binary and checked by the tests.
		panic(fmt.Sprintf("search: embedded wordnet.txt.gz: %v", err))
	}
	wordnetDecoded.Store(true)
	return t
})

func decodeWordnet(gz []byte) (map[string][]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(zr)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			return nil, fmt.Errorf("line %d: want a word and one related word or more", n)
		}
		w := stem(fs[0])
		for _, r := range fs[1:] {
			if s := stem(r); s != w && !stopWords[r] {
				out[w] = appendNew(out[w], s)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, zr.Close()
}
