package search_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/manifold-mcp/manifold/proxy/search"
)

var evalTune = flag.Bool("tune", false, "TestTuneDev: print the dev split's misses in full and a sweep of the ranker's knobs, on dev only")

// TestTuneDev is the tuning aid: it reads only the dev split (the test split
// must not steer the ranker), printing each miss with its query and hits, and
// the dev figures as each knob moves around its default.
func TestTuneDev(t *testing.T) {
	if !*evalTune {
		t.Skip("a tuning aid: go test -run TestTuneDev -v ./proxy/search/ -args -tune")
	}
	docs := loadEvalCatalog(t)
	var dev []evalQuery
	for _, q := range loadEvalQueries(t, docs) {
		if q.Split == "dev" {
			dev = append(dev, q)
		}
	}
	with := func(o search.Options) evalRanker {
		ix := search.NewWith(docs, o)
		return evalRanker{"", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
	}
	base := search.DefaultOptions
	if q := os.Getenv("EXPLAIN"); q != "" {
		ix := search.NewWith(docs, base)
		hits := ix.Search(q, 5)
		t.Log(ix.Explain(q))
		for _, id := range append(evalHitIDs(hits), strings.Fields(os.Getenv("DOCS"))...) {
			t.Logf("%s: %s", id, ix.ExplainDoc(q, id))
		}
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dev, defaults: %s\n", evalRun(with(base), dev, "dev"))
	ix := search.NewWith(docs, base)
	r := evalRanker{"", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
	for _, q := range dev {
		got := r.search(q.Query, 5)
		if (q.Want == "" && len(got) > 0) || (q.Want != "" && (len(got) == 0 || (got[0] != q.Want && !slices.Contains(q.Also, got[0])))) {
			fmt.Fprintf(&b, "  %s %q want %q got %v\n      %s\n", q.ID, q.Query, q.Want, got, ix.Explain(q.Query))
		}
	}
	// The no-match decision: the top hit's cover, for right top hits, wrong
	// ones and no-match queries.
	for _, q := range dev {
		id, cover := ix.Top(q.Query)
		kind := "right"
		switch {
		case q.Want == "":
			kind = "NOMATCH"
		case id != q.Want && !slices.Contains(q.Also, id):
			kind = "wrong"
		}
		fmt.Fprintf(&b, "cover %.2f %-7s %s %q -> %s\n", cover, kind, q.ID, q.Query, id)
	}
	sweep := func(name string, vals []float64, set func(o *search.Options, v float64)) {
		for _, v := range vals {
			o := base
			set(&o, v)
			fmt.Fprintf(&b, "%s=%-5g %s\n", name, v, evalRun(with(o), dev, "dev"))
		}
	}
	for _, u := range []float64{0.25, 0.5, 0.75, 1} {
		for _, c := range []float64{0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6} {
			o := base
			o.Unknown, o.MinCover = u, c
			fmt.Fprintf(&b, "Unknown=%-4g MinCover=%-4g %s\n", u, c, evalRun(with(o), dev, "dev"))
		}
	}
	sweep("MinCover", []float64{0.3, 0.4, 0.5, 0.6, 0.7}, func(o *search.Options, v float64) { o.MinCover = v })
	sweep("Profile", []float64{0, 0.2, 0.3, 0.5, 0.7}, func(o *search.Options, v float64) { o.Profile = v })
	sweep("Pair", []float64{0, 0.25, 0.5, 1, 2}, func(o *search.Options, v float64) { o.Pair = v })
	sweep("CoverDepth", []float64{1, 2, 3, 5}, func(o *search.Options, v float64) { o.CoverDepth = int(v) })
	for _, pair := range []float64{0, 0.5} {
		for _, depth := range []int{1, 3} {
			for _, c := range []float64{0.4, 0.5, 0.6} {
				o := base
				o.Pair, o.CoverDepth, o.MinCover = pair, depth, c
				fmt.Fprintf(&b, "Pair=%g CoverDepth=%d MinCover=%g %s\n", pair, depth, c, evalRun(with(o), dev, "dev"))
			}
		}
	}
	sweep("Unknown", []float64{0.25, 0.5, 0.75, 1}, func(o *search.Options, v float64) { o.Unknown = v })
	sweep("Synonym", []float64{0.3, 0.5, 0.6, 0.8}, func(o *search.Options, v float64) { o.Synonym = v })
	sweep("K1", []float64{0.8, 1.2, 2}, func(o *search.Options, v float64) { o.K1 = v })
	sweep("B", []float64{0.3, 0.5, 0.75, 1}, func(o *search.Options, v float64) { o.B = v })
	for f, name := range []string{"wName", "wTitle", "wDesc", "wParams", "wServer"} {
		sweep(name, []float64{0, 0.5, 1, 2, 3, 5}, func(o *search.Options, v float64) { o.Weights[f] = v })
	}
	t.Log("\n" + b.String())
}
