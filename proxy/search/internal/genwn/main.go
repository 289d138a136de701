// Command genwn writes the table of derivationally related forms that the
// search package's query expansion uses (../../wordnet.txt.gz) from WordNet
// 3.0 as Debian packages it (wordnet-base 1:3.0-37, /usr/share/wordnet;
// WordNet 3.0 licence, reproduced in ../../WORDNET-LICENSE). From
// proxy/search:
//
//	apt-get install wordnet-base
//	go run ./internal/genwn -vocab vectors.bin -out wordnet.txt.gz
//
// For each single-word, lower-case ASCII lemma of a noun, verb or
// adjective that is also one of the 30,000 frequent words of the
// word-vector table (-vocab), it lists the lemma's derivationally related
// forms ("reviewer review", "translation translate"), at most -max. -senses N adds
// the other words of the lemma's first N senses (its synonyms; WordNet
// orders senses by frequency) and -hyper those of their direct hypernyms:
// on the dev queries neither did better than the related forms alone (the
// same one more request served, at best), and with -hyper, or at a higher
// weight, more requests that no tool serves were answered. Nothing is chosen
// from a catalog or a query. Lines are "word rel rel …", sorted; the output
// is deterministic: the committed table (7,974 words, 52,737 bytes) has
// SHA-256
// 66a23070674deac8fd09141b9d6a2f502c0996720887b335cdf954920391d3d9.
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "/usr/share/wordnet", "the WordNet dict directory (index.* and data.*)")
	out := flag.String("out", "wordnet.txt.gz", "the file to write")
	senses := flag.Int("senses", 0, "senses of a lemma whose synonyms it takes")
	hyper := flag.Bool("hyper", false, "also take the lemmas of each such sense's direct hypernyms")
	deriv := flag.Bool("deriv", true, "also take the lemma's derivationally related forms")
	maxRel := flag.Int("max", 12, "most related words a lemma keeps")
	vocab := flag.String("vocab", "", "keep only lemmas among the words of this word-vector table (../../vectors.bin)")
	flag.Parse()
	var keep map[string]bool
	if *vocab != "" {
		var err error
		if keep, err = vocabulary(*vocab); err != nil {
			fmt.Fprintln(os.Stderr, "genwn:", err)
			os.Exit(1)
		}
	}
	if err := run(*in, *out, *senses, *hyper, *deriv, *maxRel, keep); err != nil {
		fmt.Fprintln(os.Stderr, "genwn:", err)
		os.Exit(1)
	}
}

type pointer struct {
	symbol string
	offset string
	pos    string
	src    int // 0: the whole synset; else the source word's number (1-based)
	dst    int
}

type synset struct {
	words []string
	ptrs  []pointer
}

func plain(w string) bool {
	if len(w) < 2 {
		return false
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

func readData(path string) (map[string]*synset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]*synset{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue // the licence header
		}
		body, _, _ := strings.Cut(line, " | ")
		fs := strings.Fields(body)
		if len(fs) < 4 {
			return nil, fmt.Errorf("%s: short line %q", path, line)
		}
		n, err := strconv.ParseInt(fs[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: word count: %v", path, fs[0], err)
		}
		s := &synset{}
		p := 4
		for range n {
			w := strings.ToLower(fs[p])
			if i := strings.IndexByte(w, '('); i >= 0 {
				w = w[:i] // adjective markers: "(a)", "(p)", "(ip)"
			}
			s.words = append(s.words, w)
			p += 2
		}
		pc, err := strconv.Atoi(fs[p])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: pointer count: %v", path, fs[0], err)
		}
		p++
		for range pc {
			st := fs[p+3]
			src, _ := strconv.ParseInt(st[:2], 16, 32)
			dst, _ := strconv.ParseInt(st[2:], 16, 32)
			s.ptrs = append(s.ptrs, pointer{symbol: fs[p], offset: fs[p+1], pos: fs[p+2], src: int(src), dst: int(dst)})
			p += 4
		}
		out[fs[0]] = s
	}
	return out, sc.Err()
}

func run(dir, out string, senses int, hyper, deriv bool, maxRel int, keep map[string]bool) error {
	type pos struct{ name, letter string }
	poses := []pos{{"noun", "n"}, {"verb", "v"}, {"adj", "a"}}
	data := map[string]map[string]*synset{} // pos letter → offset → synset
	for _, p := range poses {
		d, err := readData(filepath.Join(dir, "data."+p.name))
		if err != nil {
			return err
		}
		data[p.letter] = d
	}
	data["s"] = data["a"] // adjective satellites live in data.adj
	rel := map[string][]string{}
	add := func(w, o string) {
		if o != w && plain(o) && !slices.Contains(rel[w], o) {
			rel[w] = append(rel[w], o)
		}
	}
	for _, p := range poses {
		f, err := os.Open(filepath.Join(dir, "index."+p.name))
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "  ") {
				continue
			}
			fs := strings.Fields(line)
			lemma := fs[0]
			if !plain(lemma) {
				continue
			}
			nsyn, _ := strconv.Atoi(fs[2])
			offsets := fs[len(fs)-nsyn:]
			for i, off := range offsets {
				s := data[p.letter][off]
				if s == nil {
					f.Close()
					return fmt.Errorf("index.%s: %s: synset %s not in data.%s", p.name, lemma, off, p.name)
				}
				me := slices.Index(s.words, lemma) + 1
				if deriv {
					for _, ptr := range s.ptrs {
						if ptr.symbol == "+" && ptr.src == me && data[ptr.pos] != nil {
							if t := data[ptr.pos][ptr.offset]; t != nil && ptr.dst > 0 && ptr.dst <= len(t.words) {
								add(lemma, t.words[ptr.dst-1])
							}
						}
					}
				}
				if i >= senses {
					continue
				}
				for _, w := range s.words {
					add(lemma, w)
				}
				if hyper {
					for _, ptr := range s.ptrs {
						if (ptr.symbol == "@" || ptr.symbol == "@i") && ptr.src == 0 {
							if t := data[ptr.pos][ptr.offset]; t != nil {
								for _, w := range t.words {
									add(lemma, w)
								}
							}
						}
					}
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	words := make([]string, 0, len(rel))
	for w, rs := range rel {
		if len(rs) > 0 && (keep == nil || keep[w]) {
			words = append(words, w)
		}
	}
	slices.Sort(words)
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(o, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(zw)
	for _, w := range words {
		rs := rel[w]
		if len(rs) > maxRel {
			rs = rs[:maxRel]
		}
		fmt.Fprintf(bw, "%s %s\n", w, strings.Join(rs, " "))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return o.Close()
}

// vocabulary reads the words of a word-vector table in the search
// package's format (see ../genvec).
func vocabulary(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const magic = "MFWV1\n"
	if len(b) < len(magic)+8 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%s: not a word-vector table", path)
	}
	p := len(magic)
	n := int(binary.LittleEndian.Uint32(b[p:]))
	p += 8
	out := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		if p >= len(b) || p+1+int(b[p]) > len(b) {
			return nil, fmt.Errorf("%s: word %d: truncated", path, i)
		}
		out[string(b[p+1:p+1+int(b[p])])] = true
		p += 1 + int(b[p])
	}
	return out, nil
}
