package search

import (
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSearchForeignProduct: a request naming a well-known product that no
// tool is about gets no hits, however well its other words match; a
// product given as a name, quoted, or one the catalog is about, does not
// count.
func TestSearchForeignProduct(t *testing.T) {
	docs := append(slices.Clone(testDocs), Doc{
		ID: "tasks__create_task", Name: "tasks__create_task", Server: "tasks",
		Description: "Create a task in a project. Tasks synced from Asana keep their id.",
		Params:      []Param{{Name: "project"}, {Name: "title"}},
	})
	ix := New(docs)
	for _, tc := range []struct {
		query string
		want  []string // first hit, or none
	}{
		{query: "create a task in my project", want: []string{"tasks__create_task"}},
		{query: "create a task in my Asana project", want: nil}, // mentioned in passing is not about
		{query: "create a task in my Trello project", want: nil},
		{query: "create a task in the project named trello", want: []string{"tasks__create_task"}},
		{query: `create a task titled "Jira migration"`, want: []string{"tasks__create_task"}},
		{query: "start a Google Meet call", want: nil},
		{query: "list issues of the repo in GitHub", want: []string{"github__list_issues"}},
	} {
		got := ids(ix.Search(tc.query, 1))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Search(%q) (-want +got):\n%s", tc.query, diff)
		}
	}
	// A catalog whose server is the product answers.
	withAsana := append(slices.Clone(docs), Doc{
		ID: "asana__create_task", Name: "asana__create_task", Server: "asana",
		Description: "Create a task.", Params: []Param{{Name: "project"}},
	})
	if got := ids(New(withAsana).Search("create a task in my Asana project", 5)); !slices.Contains(got, "asana__create_task") {
		t.Errorf("with an asana server: Search = %v, want asana__create_task among the hits", got)
	}
}

// TestSearchEmbed checks the plumbing of Options.Embed with a stand-in
// embedding that knows two meanings: each doc is embedded once at build and
// each query once per Search; with a ranking weight the cosine reorders docs
// that match a word, and the best doc's cosine raises the confidence.
func TestSearchEmbed(t *testing.T) {
	docs := []Doc{
		{ID: "a__get_item", Name: "a__get_item", Server: "a", Description: "Get an item of the store."},
		{ID: "a__get_record", Name: "a__get_record", Server: "a", Description: "Get a record of the archive."},
	}
	var calls atomic.Int32
	embed := func(text string) []float32 {
		calls.Add(1)
		if strings.Contains(text, "archive") || strings.Contains(text, "history") {
			return []float32{0, 1}
		}
		return []float32{1, 0}
	}
	plain := ids(New(docs).Search("get it from history", 2))
	opt := defaultOptions
	opt.Embed = 1
	ix := buildWith(docs, opt, embed)
	if n := calls.Load(); n != int32(len(docs)) {
		t.Errorf("build embedded %d texts, want %d (one per doc)", n, len(docs))
	}
	got := ids(ix.Search("get it from history", 2))
	if n := calls.Load(); n != int32(len(docs))+1 {
		t.Errorf("Search embedded %d texts, want 1", n-int32(len(docs)))
	}
	if diff := cmp.Diff([]string{"a__get_item", "a__get_record"}, plain); diff != "" {
		t.Fatalf("without Embed (a tie, by ID) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a__get_record", "a__get_item"}, got); diff != "" {
		t.Errorf("with Embed (-want +got):\n%s", diff)
	}
	// A doc that matches no word stays out, whatever its cosine.
	if got := ids(ix.Search("history", 2)); len(got) != 0 {
		t.Errorf("Search(history) = %v, want no hits", got)
	}
	// The confidence gains EmbedConf × the best doc's cosine, and the
	// ranking weight does not count in it.
	opt = defaultOptions
	base := build(docs, opt).rank("get the record from history")
	opt.Embed, opt.EmbedConf = 1, 0.25
	with := buildWith(docs, opt, embed).rank("get the record from history")
	if got, want := with.confidence(opt)-base.confidence(defaultOptions), 0.25; math.Abs(got-want) > 1e-9 {
		t.Errorf("confidence with EmbedConf 0.25 and cosine 1 rose by %v, want %v", got, want)
	}
}
