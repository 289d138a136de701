package search_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/manifold-mcp/manifold/proxy/search"
)

var evalTune = flag.Bool("tune", false, "TestTuneDev: print the dev split's misses in full and a sweep of the ranker's knobs, on dev only")

// TestTuneDev is the tuning aid: it reads only the dev split (the test split
// must not steer the ranker). It prints each miss of ours with how the query
// was read, the confidence the no-match decision saw for every query, and the dev figures as each knob moves from its default.
// EXPLAIN="a query" DOCS="id …" explains one query instead; DESCEND=1 runs a
// coordinate descent on the shortfall from the targets and shows the result
// on each half of dev, to see how much it leans on the queries it was fit to.
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
	with := func(o search.Knobs) evalRanker {
		ix := search.NewWithKnobs(docs, o)
		return evalRanker{"", func(q string, k int) []string { return evalHitIDs(ix.Search(q, k)) }}
	}
	base := search.DefaultKnobs
	if os.Getenv("SEMANTIC") != "" {
		base = search.SemanticKnobs
	}
	if os.Getenv("ALWAYS") != "" {
		base.MinConfidence = math.Inf(-1)
	}
	ix := search.NewWithKnobs(docs, base)
	if q := os.Getenv("EXPLAIN"); q != "" {
		hits := ix.Search(q, 5)
		t.Log(ix.Explain(q))
		for _, id := range append(evalHitIDs(hits), strings.Fields(os.Getenv("DOCS"))...) {
			t.Logf("%s: %s", id, ix.ExplainDoc(q, id))
		}
		return
	}
	right := func(q evalQuery, id string) bool { return id == q.Want || slices.Contains(q.Also, id) }
	var b strings.Builder
	fmt.Fprintf(&b, "dev, defaults: %s\n", evalRun(with(base), dev, "dev"))
	if os.Getenv("RANKMISS") != "" {
		// Where the right tool ranks, the no-match decision aside.
		o := base
		o.MinConfidence = math.Inf(-1)
		ix0 := search.NewWithKnobs(docs, o)
		for _, q := range dev {
			got := evalHitIDs(ix0.Search(q.Query, 5))
			if q.Want != "" && (len(got) == 0 || !right(q, got[0])) {
				at := slices.IndexFunc(got, func(id string) bool { return right(q, id) })
				fmt.Fprintf(&b, "rank %d %s %q want %s got %v\n    want: %s\n    got:  %s\n", at+1, q.ID, q.Query, q.Want, got,
					ix0.ExplainDoc(q.Query, q.Want), ix0.ExplainDoc(q.Query, got[0]))
			}
		}
	}

	for _, q := range dev {
		got := evalHitIDs(ix.Search(q.Query, 5))
		if (q.Want == "" && len(got) > 0) || (q.Want != "" && (len(got) == 0 || !right(q, got[0]))) {
			fmt.Fprintf(&b, "  %s %q want %q got %v\n      %s\n", q.ID, q.Query, q.Want, got, ix.Explain(q.Query))
		}
	}
	for _, q := range dev {
		id, conf := ix.Top(q.Query)
		kind := "right"
		switch {
		case q.Want == "":
			kind = "NOMATCH"
		case !right(q, id):
			kind = "wrong"
		}
		fmt.Fprintf(&b, "confidence %5.2f %-7s %s %q -> %s   unmatched: %s\n", conf, kind, q.ID, q.Query, id, ix.Uncovered(q.Query))
	}

	knobs := []struct {
		name string
		vals []float64
		set  func(o *search.Knobs, v float64)
	}{
		{"Mean", []float64{0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8}, func(o *search.Knobs, v float64) { o.Mean = v }},
		{"MeanFloor", []float64{-0.2, -0.1, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, func(o *search.Knobs, v float64) { o.MeanFloor = v }},
		{"MinConfidence", []float64{0.1, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.18}, func(o *search.Knobs, v float64) { o.MinConfidence = v }},
		{"Unknown", []float64{0.1, 0.15, 0.2, 0.26, 0.3, 0.4, 0.5}, func(o *search.Knobs, v float64) { o.Unknown = v }},
		{"Name", []float64{0.3, 0.6, 1, 2, 3}, func(o *search.Knobs, v float64) { o.Name = v }},
		{"Arg", []float64{0.1, 0.3, 0.6, 1}, func(o *search.Knobs, v float64) { o.Arg = v }},
		{"Value", []float64{0.1, 0.2, 0.3, 0.5}, func(o *search.Knobs, v float64) { o.Value = v }},
		{"Synonym", []float64{0.4, 0.5, 0.6, 0.7, 0.8}, func(o *search.Knobs, v float64) { o.Synonym = v }},
		{"Related", []float64{0, 0.1, 0.2, 0.35, 0.5, 0.7}, func(o *search.Knobs, v float64) { o.Related = v }},
		{"B", []float64{0.3, 0.5, 0.75}, func(o *search.Knobs, v float64) { o.B = v }},
		{"K1", []float64{0.8, 1.2, 1.6, 2}, func(o *search.Knobs, v float64) { o.K1 = v }},
		{"Profile", []float64{0, 0.3, 0.5, 0.7}, func(o *search.Knobs, v float64) { o.Profile = v }},
		{"wName", []float64{1, 2, 3, 4}, func(o *search.Knobs, v float64) { o.Weights[search.FieldName] = v }},
		{"wTitle", []float64{0.5, 1, 2, 3}, func(o *search.Knobs, v float64) { o.Weights[search.FieldTitle] = v }},
		{"wDesc", []float64{0.5, 1, 1.5}, func(o *search.Knobs, v float64) { o.Weights[search.FieldDescription] = v }},
		{"wParams", []float64{0.2, 0.4, 0.7, 1}, func(o *search.Knobs, v float64) { o.Weights[search.FieldParams] = v }},
		{"wServer", []float64{0.3, 0.6, 1, 1.5}, func(o *search.Knobs, v float64) { o.Weights[search.FieldServer] = v }},
	}
	shortfall := func(f evalFigures) float64 {
		return max(0, evalTargetTop5-f.top5Rate()) + max(0, evalTargetTop1-f.top1Rate()) + max(0, f.wrongRate()-evalTargetNoMatch)
	}
	if os.Getenv("DESCEND") != "" {
		cur := base
		curF := shortfall(evalRun(with(cur), dev, "dev"))
		for pass := range 3 {
			improved := false
			for _, k := range knobs {
				for _, v := range k.vals {
					o := cur
					k.set(&o, v)
					if f := shortfall(evalRun(with(o), dev, "dev")); f < curF-1e-9 {
						cur, curF, improved = o, f, true
						fmt.Fprintf(&b, "pass %d %s=%g shortfall %.3f\n", pass, k.name, v, f)
					}
				}
			}
			if !improved {
				break
			}
		}
		var odd, even []evalQuery
		for i, q := range dev {
			if i%2 == 0 {
				even = append(even, q)
			} else {
				odd = append(odd, q)
			}
		}
		fmt.Fprintf(&b, "descended: %+v\n  dev  %s\n  odd  %s\n  even %s\n", cur,
			evalRun(with(cur), dev, "dev"), evalRun(with(cur), odd, "dev"), evalRun(with(cur), even, "dev"))
	} else {
		for _, k := range knobs {
			for _, v := range k.vals {
				o := base
				k.set(&o, v)
				fmt.Fprintf(&b, "%s=%-5g %s\n", k.name, v, evalRun(with(o), dev, "dev"))
			}
		}
	}
	t.Log("\n" + b.String())
}
