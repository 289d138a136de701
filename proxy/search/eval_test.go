package search_test

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/manifold-mcp/manifold/proxy/search"
	"github.com/manifold-mcp/manifold/proxy/search/internal/encoder"
)

// The retrieval evaluation of issue 12: real tools/list answers recorded under
// testdata/catalog and labelled queries in testdata/queries.json (see
// testdata/README.md). TestRetrievalQuality checks the figures; bash eval.sh
// prints the full comparison (TestRetrievalReport with -report).

var (
	evalReport = flag.Bool("report", false, "TestRetrievalReport: print the comparison table and every miss of ours")
	evalData   = flag.String("evaldata", "testdata", "the folder of catalog/*.json and queries.json")
)

// The targets.
const (
	evalTargetTop5    = 0.90
	evalTargetTop1    = 0.75
	evalTargetNoMatch = 0.10 // most share of no-match queries answered with a hit
)

// The floors TestRetrievalQuality holds the rankers to, on the test split
// and on all queries: what they do today (ours: test 55.6 / 70.1 / 16 %,
// all 58.9 / 76.2 / 12 %; ours + semantic: test 56.4 / 70.1 / 16 %, all
// 61.0 / 76.6 / 12 %), so that a change that makes one worse fails. The
// no-match ceiling is above the target: the decision was
// calibrated on dev (8 % there) to refuse fewer right answers, and on test
// it answers 4 of 25 no-match requests. Ours + semantic + encoder is
// measured on the whole catalog by eval.sh only, as embedding it takes
// minutes; the quick test runs it on a subset (TestRetrievalEncoderSubset),
// and internal/encoder's tests check the encoder against TF.js.
var evalFloors = map[string]struct{ top5, top1, noMatch float64 }{
	"ours (BM25F)":    {top5: 0.70, top1: 0.55, noMatch: 0.16},
	"ours + semantic": {top5: 0.70, top1: 0.56, noMatch: 0.16},
}

type evalQuery struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Want  string   `json:"want"` // "" when no tool of the catalog fits
	Also  []string `json:"also"` // tools as right as Want, rarely
	Split string   `json:"split"`
	Note  string   `json:"note"`
}

type evalCatalogFile struct {
	Server       string `json:"server"`
	Instructions string `json:"instructions"`
	Tools        []struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		InputSchema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"inputSchema"`
		Annotations struct {
			Title string `json:"title"`
		} `json:"annotations"`
	} `json:"tools"`
}

// loadEvalCatalog reads every recorded catalog into Docs, named as Manifold
// exposes them: <server>__<tool>.
func loadEvalCatalog(tb testing.TB) []search.Doc {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(*evalData, "catalog", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded catalogs in %s/catalog (err %v): the evaluation needs them", *evalData, err)
	}
	var docs []search.Doc
	seen := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var c evalCatalogFile
		if err := json.Unmarshal(b, &c); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		if c.Server == "" || len(c.Tools) == 0 {
			tb.Fatalf("%s: no server key or no tools", f)
		}
		serverText, _, _ := strings.Cut(strings.TrimSpace(c.Instructions), "\n")
		for _, t := range c.Tools {
			id := c.Server + "__" + t.Name
			if other, dup := seen[id]; dup {
				tb.Fatalf("%s: tool %q also in %s", f, id, other)
			}
			seen[id] = f
			title := t.Title
			if title == "" {
				title = t.Annotations.Title
			}
			var params []search.Param
			for name, p := range t.InputSchema.Properties {
				params = append(params, search.Param{Name: name, Description: p.Description})
			}
			slices.SortFunc(params, func(a, b search.Param) int { return cmp.Compare(a.Name, b.Name) })
			docs = append(docs, search.Doc{
				ID: id, Name: id, Title: title, Description: t.Description,
				Params: params, Server: c.Server, ServerText: serverText,
			})
		}
	}
	return docs
}

func loadEvalQueries(tb testing.TB, docs []search.Doc) []evalQuery {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(*evalData, "queries.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var qs []evalQuery
	if err := json.Unmarshal(b, &qs); err != nil {
		tb.Fatalf("testdata/queries.json: %v", err)
	}
	known := map[string]bool{}
	for _, d := range docs {
		known[d.ID] = true
	}
	ids := map[string]bool{}
	for _, q := range qs {
		switch {
		case q.ID == "" || ids[q.ID]:
			tb.Fatalf("queries.json: missing or repeated id %q", q.ID)
		case q.Split != "dev" && q.Split != "test":
			tb.Fatalf("queries.json: %s: split %q is neither dev nor test", q.ID, q.Split)
		case q.Want != "" && !known[q.Want]:
			tb.Fatalf("queries.json: %s: want %q is no recorded tool", q.ID, q.Want)
		case q.Want == "" && len(q.Also) > 0:
			tb.Fatalf("queries.json: %s: also without want", q.ID)
		}
		for _, a := range q.Also {
			if !known[a] {
				tb.Fatalf("queries.json: %s: also %q is no recorded tool", q.ID, a)
			}
		}
		ids[q.ID] = true
	}
	return qs
}

// An evalRanker answers a query with at most k tool IDs, best first.
type evalRanker struct {
	name   string
	search func(q string, k int) []string
}

func evalOurs(docs []search.Doc) evalRanker {
	ix := search.New(docs)
	return evalRanker{"ours (BM25F)", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
}

// evalOursSemantic is ours with the word-vector signal (Options.Semantic).
func evalOursSemantic(docs []search.Doc) evalRanker {
	ix := search.NewWith(docs, search.Options{Semantic: true})
	return evalRanker{"ours + semantic", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
}

// evalOursEncoder is ours + semantic with the sentence encoder
// (internal/encoder) as Options.Embed; building it embeds every tool, which
// takes minutes for the recorded catalog (eval.sh only). cost tells what
// building took and what the searches run so far took.
func evalOursEncoder(tb testing.TB, docs []search.Doc) (r evalRanker, cost func() string) {
	m, err := encoder.Default()
	if err != nil {
		tb.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	start := time.Now()
	ix := search.NewWith(docs, search.Options{Semantic: true, Embed: m.Encode})
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap := float64(int64(ms.HeapAlloc)-int64(heap0)) / 1e6
	pieces := 0
	for _, d := range docs {
		pieces += min(len(m.Tokenize(search.EmbedText(d))), 128)
	}
	var queries int
	var spent time.Duration
	r = evalRanker{"ours + semantic + encoder", func(q string, k int) []string {
		start := time.Now()
		hits := ix.Search(q, k)
		spent += time.Since(start)
		queries++
		return evalHitIDs(hits)
	}}
	cost = func() string {
		return fmt.Sprintf("encoder: building the index of %d tools (%d pieces embedded) took %v, %.0f ms a tool; "+
			"the index holds %.2f MB of live heap (embeddings included); a search took %.1f ms on average over %d\n",
			len(docs), pieces, build.Round(time.Millisecond), float64(build.Milliseconds())/float64(len(docs)),
			heap, float64(spent.Microseconds())/1e3/float64(max(queries, 1)), queries)
	}
	return r, cost
}

// evalOursSemanticAlways is ours + semantic without the no-match decision.
func evalOursSemanticAlways(docs []search.Doc) evalRanker {
	o := search.SemanticKnobs
	o.MinConfidence = math.Inf(-1)
	ix := search.NewWithKnobs(docs, o)
	return evalRanker{"ours + semantic, never no-match", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
}

// evalOursAlways is our ranking without the no-match decision: what the
// ranking alone finds, and what the decision costs.
func evalOursAlways(docs []search.Doc) evalRanker {
	o := search.DefaultKnobs
	o.MinConfidence = math.Inf(-1)
	ix := search.NewWithKnobs(docs, o)
	return evalRanker{"ours, never no-match", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
}

func evalPlainBM25(docs []search.Doc) evalRanker {
	ix := search.NewPlainBM25(docs)
	return evalRanker{"plain BM25", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
}

// evalSubstring is the naive baseline: the query's words (split at non-letters,
// lower-cased, less a few function words) and, per tool, how many of them
// occur as substrings of its lower-cased name, title and description; every
// tool with one or more is a hit, most words first, ties by name.
func evalSubstring(docs []search.Doc) evalRanker {
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = strings.ToLower(d.Name + " " + d.Title + " " + d.Description)
	}
	function := map[string]bool{}
	for _, w := range strings.Fields("a an the and or of to in on at by for from with is are be it this that i me my you your can could would please do what which how") {
		function[w] = true
	}
	return evalRanker{"substring", func(q string, k int) []string {
		var words []string
		for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if !function[w] && !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
		type hit struct {
			id string
			n  int
		}
		var hits []hit
		for i, t := range texts {
			n := 0
			for _, w := range words {
				if strings.Contains(t, w) {
					n++
				}
			}
			if n > 0 {
				hits = append(hits, hit{docs[i].ID, n})
			}
		}
		slices.SortFunc(hits, func(a, b hit) int {
			if c := cmp.Compare(b.n, a.n); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		var out []string
		for _, h := range hits[:min(k, len(hits))] {
			out = append(out, h.id)
		}
		return out
	}}
}

func evalHitIDs(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// evalFigures are one ranker's results on one set of queries.
type evalFigures struct {
	positives, top1, top5 int // queries with a right tool; right tool first; in the first five
	noMatch, wrong        int // queries without one; answered with a hit anyway
	misses                []string
}

func (f evalFigures) rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}
func (f evalFigures) top1Rate() float64  { return f.rate(f.top1, f.positives) }
func (f evalFigures) top5Rate() float64  { return f.rate(f.top5, f.positives) }
func (f evalFigures) wrongRate() float64 { return f.rate(f.wrong, f.noMatch) }

func (f evalFigures) String() string {
	return fmt.Sprintf("top-1 %5.1f %% (%d/%d)  top-5 %5.1f %% (%d/%d)  no-match answered %5.1f %% (%d/%d)",
		100*f.top1Rate(), f.top1, f.positives, 100*f.top5Rate(), f.top5, f.positives, 100*f.wrongRate(), f.wrong, f.noMatch)
}

// evalRun runs r over the queries of one split ("" = all).
func evalRun(r evalRanker, qs []evalQuery, split string) evalFigures {
	var f evalFigures
	for _, q := range qs {
		if split != "" && q.Split != split {
			continue
		}
		got := r.search(q.Query, 5)
		if q.Want == "" {
			f.noMatch++
			if len(got) > 0 {
				f.wrong++
				f.misses = append(f.misses, fmt.Sprintf("%s: no tool fits, answered %s", q.ID, got[0]))
			}
			continue
		}
		f.positives++
		i := slices.IndexFunc(got, func(id string) bool { return id == q.Want || slices.Contains(q.Also, id) })
		switch {
		case i == 0:
			f.top1++
		case i < 0:
			f.misses = append(f.misses, fmt.Sprintf("%s: want %s, not in top 5 %v", q.ID, q.Want, got))
		default:
			f.misses = append(f.misses, fmt.Sprintf("%s: want %s, at %d of %v", q.ID, q.Want, i+1, got))
		}
		if i >= 0 {
			f.top5++
		}
	}
	return f
}

// TestRetrievalQuality runs every labelled query through our ranker, with
// and without the semantic signal, and prints the figures for the test split
// (never used for tuning) and for all queries against issue 12's targets.
// The rankers do not meet the targets yet (see eval.sh and the README), so
// what fails here is a regression: a figure below the floor it holds today,
// no fewer than half plain BM25's wrong answers to no-match queries, or the
// semantic signal ranking worse than ours without it.
func TestRetrievalQuality(t *testing.T) {
	docs := loadEvalCatalog(t)
	qs := loadEvalQueries(t, docs)
	ours, sem, plain := evalOurs(docs), evalOursSemantic(docs), evalPlainBM25(docs)
	for _, split := range []string{"test", ""} {
		name := cmp.Or(split, "all")
		p := evalRun(plain, qs, split)
		figures := map[string]evalFigures{}
		for _, r := range []evalRanker{ours, sem} {
			f := evalRun(r, qs, split)
			figures[r.name] = f
			if f.positives == 0 || f.noMatch == 0 {
				t.Fatalf("%s: %d queries with a right tool, %d without: the evaluation needs both", name, f.positives, f.noMatch)
			}
			met := func(ok bool) string { return map[bool]string{true: "met", false: "NOT MET"}[ok] }
			t.Logf("%s, %s: %d tools, %s", name, r.name, len(docs), f)
			t.Logf("%s, %s: targets: top-5 ≥ %.0f %% %s, top-1 ≥ %.0f %% %s, no-match answered ≤ %.0f %% %s", name, r.name,
				100*evalTargetTop5, met(f.top5Rate() >= evalTargetTop5), 100*evalTargetTop1, met(f.top1Rate() >= evalTargetTop1),
				100*evalTargetNoMatch, met(f.wrongRate() <= evalTargetNoMatch))
			floor := evalFloors[r.name]
			if f.top5Rate() < floor.top5 {
				t.Errorf("%s, %s: top-5 %.1f %%, below the floor of %.0f %%", name, r.name, 100*f.top5Rate(), 100*floor.top5)
			}
			if f.top1Rate() < floor.top1 {
				t.Errorf("%s, %s: top-1 %.1f %%, below the floor of %.0f %%", name, r.name, 100*f.top1Rate(), 100*floor.top1)
			}
			if f.wrongRate() > floor.noMatch {
				t.Errorf("%s, %s: %.1f %% of no-match queries answered with a tool, above the ceiling of %.0f %%", name, r.name, 100*f.wrongRate(), 100*floor.noMatch)
			}
			if f.wrong*2 > p.wrong {
				t.Errorf("%s, %s: %d no-match queries answered, plain BM25 %d: ours must answer at most half as many", name, r.name, f.wrong, p.wrong)
			}
		}
		if o, s := figures[ours.name], figures[sem.name]; s.top1 < o.top1 || s.top5 < o.top5 || s.wrong > o.wrong {
			t.Errorf("%s: ours + semantic (%s) does worse than ours (%s) on some figure", name, s, o)
		}
	}
}

// TestRetrievalEncoderSubset runs the sentence encoder in the quick test on
// what it can afford: the tools of five servers (filesystem, github, slack,
// memory, redis: 61 tools) and the dev queries for them or for no tool, so
// that a change that breaks the encoder's place in the ranking fails here
// and not only in eval.sh (which runs it on everything). The bounds are
// what it measures on this subset (24 queries with a right tool, 25
// without; ours + semantic and + encoder alike: top-1 62.5, top-5 91.7 %,
// no-match answered 12 %; 58.3 / 87.5 / 12 % before the related forms of
// wordnet.go), and it must not do worse than ours + semantic at top-5.
func TestRetrievalEncoderSubset(t *testing.T) {
	servers := map[string]bool{"filesystem": true, "github": true, "slack": true, "memory": true, "redis": true}
	all := loadEvalCatalog(t)
	var docs []search.Doc
	in := map[string]bool{}
	for _, d := range all {
		if servers[d.Server] {
			docs = append(docs, d)
			in[d.ID] = true
		}
	}
	var qs []evalQuery
	for _, q := range loadEvalQueries(t, all) {
		if q.Split == "dev" && (q.Want == "" || in[q.Want]) {
			q.Also = slices.DeleteFunc(slices.Clone(q.Also), func(id string) bool { return !in[id] })
			qs = append(qs, q)
		}
	}
	sem := evalRun(evalOursSemantic(docs), qs, "dev")
	r, _ := evalOursEncoder(t, docs)
	enc := evalRun(r, qs, "dev")
	t.Logf("%d tools, %d queries; ours + semantic: %s", len(docs), len(qs), sem)
	t.Logf("ours + semantic + encoder: %s", enc)
	if enc.positives < 20 || enc.noMatch < 20 {
		t.Fatalf("%d queries with a right tool, %d without: too few", enc.positives, enc.noMatch)
	}
	for _, c := range []struct {
		what       string
		got, floor float64
		ceiling    bool
	}{
		{"top-1", enc.top1Rate(), 0.62, false},
		{"top-5", enc.top5Rate(), 0.91, false},
		{"no-match answered", enc.wrongRate(), 0.12, true},
	} {
		if (!c.ceiling && c.got < c.floor) || (c.ceiling && c.got > c.floor) {
			t.Errorf("ours + semantic + encoder on the subset: %s %.1f %%, past its bound of %.0f %%", c.what, 100*c.got, 100*c.floor)
		}
	}
	if enc.top5 < sem.top5 {
		t.Errorf("on the subset the encoder does worse at top-5 (%d) than ours + semantic (%d)", enc.top5, sem.top5)
	}
}

// TestRetrievalReport prints, with -report, the three rankers side by side
// per split and every miss of ours (run: bash proxy/search/eval.sh).
func TestRetrievalReport(t *testing.T) {
	if !*evalReport {
		t.Skip("the full comparison runs with -report (bash proxy/search/eval.sh)")
	}
	docs := loadEvalCatalog(t)
	qs := loadEvalQueries(t, docs)
	servers := map[string]bool{}
	for _, d := range docs {
		servers[d.Server] = true
	}
	count := func(split string, noMatch bool) int {
		n := 0
		for _, q := range qs {
			if (split == "" || q.Split == split) && (q.Want == "") == noMatch {
				n++
			}
		}
		return n
	}
	var b strings.Builder
	fmt.Fprintf(&b, "catalog: %d tools from %d servers; queries: %d (dev %d+%d, test %d+%d with a right tool + without)\n\n",
		len(docs), len(servers), len(qs), count("dev", false), count("dev", true), count("test", false), count("test", true))
	fmt.Fprintf(&b, "| split | ranker | top-1 | top-5 | no-match answered |\n|---|---|---|---|---|\n")
	enc, encCost := evalOursEncoder(t, docs)
	rankers := []evalRanker{evalSubstring(docs), evalPlainBM25(docs), evalOurs(docs), evalOursAlways(docs), evalOursSemantic(docs), evalOursSemanticAlways(docs), enc}
	for _, split := range []string{"dev", "test", ""} {
		for _, r := range rankers {
			f := evalRun(r, qs, split)
			fmt.Fprintf(&b, "| %s | %s | %.1f %% (%d/%d) | %.1f %% (%d/%d) | %.1f %% (%d/%d) |\n", cmp.Or(split, "all"), r.name,
				100*f.top1Rate(), f.top1, f.positives, 100*f.top5Rate(), f.top5, f.positives, 100*f.wrongRate(), f.wrong, f.noMatch)
		}
	}
	for _, r := range []evalRanker{rankers[2], rankers[4]} {
		for _, split := range []string{"dev", "test"} {
			f := evalRun(r, qs, split)
			fmt.Fprintf(&b, "\nmisses of %s, %s (%d):\n", r.name, split, len(f.misses))
			for _, m := range f.misses {
				fmt.Fprintf(&b, "  %s\n", m)
			}
		}
	}
	b.WriteString("\n" + evalHeap(docs) + encCost())
	t.Log("\n" + b.String())
}

// evalHeap tells the live heap an index holds, with and without the semantic
// signal (the vector table is decoded by then: BenchmarkDecodeVectors has its
// own allocation).
func evalHeap(docs []search.Doc) string {
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := live()
	ix := search.New(docs)
	h1 := live()
	sem := search.NewWith(docs, search.Options{Semantic: true})
	h2 := live()
	runtime.KeepAlive(ix)
	runtime.KeepAlive(sem)
	return fmt.Sprintf("live heap of an index of %d tools: %.2f MB, with the semantic signal %.2f MB (decoded vector table not counted)\n",
		len(docs), float64(h1-h0)/1e6, float64(h2-h1)/1e6)
}

func BenchmarkNew(b *testing.B) {
	docs := loadEvalCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		search.New(docs)
	}
}

// BenchmarkSearch is the time of one query over the recorded catalog.
func BenchmarkSearch(b *testing.B) {
	docs := loadEvalCatalog(b)
	qs := loadEvalQueries(b, docs)
	ix := search.New(docs)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ix.Search(qs[i%len(qs)].Query, 5)
		i++
	}
}

// TestRetrievalDevCalibration holds the no-match decision to what it was
// calibrated to on the dev split (ours + semantic, what the search surface
// runs: 65.8 / 83.3 / 8 %; 64.9 / 82.5 / 8 % before the related forms of
// wordnet.go, 64.0 / 79.8 / 8 % before the last recalibration): it reads
// the dev split only, so it can be run while tuning.
func TestRetrievalDevCalibration(t *testing.T) {
	docs := loadEvalCatalog(t)
	f := evalRun(evalOursSemantic(docs), loadEvalQueries(t, docs), "dev")
	t.Logf("dev, ours + semantic: %s", f)
	if f.top5 < 95 || f.top1 < 75 || f.wrong > 2 {
		t.Errorf("dev, ours + semantic: %d/%d in the top 5 (want ≥ 95), %d first (want ≥ 75), %d of %d no-match requests answered (want ≤ 2)",
			f.top5, f.positives, f.top1, f.wrong, f.noMatch)
	}
}
