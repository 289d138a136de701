package search_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/proxy/search"
)

// TestSimilarity checks the embedded word vectors decode to something that
// knows English: related words are nearer than unrelated ones, a word is
// nearest itself, and a word outside the table has no vector.
func TestSimilarity(t *testing.T) {
	tests := []struct{ a, b, unrelated string }{
		{"delete", "remove", "banana"},
		{"file", "document", "banana"},
		{"folder", "directory", "banana"},
		{"image", "picture", "tax"},
		{"previous", "earlier", "coffee"},
		{"browser", "web", "wheat"},
	}
	for _, tc := range tests {
		near, ok1 := search.Similarity(tc.a, tc.b)
		far, ok2 := search.Similarity(tc.a, tc.unrelated)
		self, ok3 := search.Similarity(tc.a, tc.a)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("%s, %s, %s: a word has no vector", tc.a, tc.b, tc.unrelated)
		}
		if near <= far+0.2 {
			t.Errorf("cos(%s, %s) = %.3f, not clearly above cos(%s, %s) = %.3f", tc.a, tc.b, near, tc.a, tc.unrelated, far)
		}
		if self < 0.999 || self > 1.001 {
			t.Errorf("cos(%s, %s) = %.4f, want 1: the vectors are not unit length", tc.a, tc.a, self)
		}
	}
	if _, ok := search.Similarity("delete", "qzxvbnq"); ok {
		t.Error("a made-up word has a vector")
	}
}

// TestSemanticRanksByMeaning: two tools match a request's words equally, and
// the one that says its other word in other terms ("recent" for
// "previous") comes first only with the semantic signal.
func TestSemanticRanksByMeaning(t *testing.T) {
	docs := []search.Doc{
		{ID: "x__list_config", Name: "x__list_config", Description: "Lists the configuration entries.", Server: "x"},
		{ID: "x__list_recent", Name: "x__list_recent", Description: "Lists the recent entries.", Server: "x"},
		{ID: "x__get_weather", Name: "x__get_weather", Description: "Returns the weather forecast for a city.", Server: "x"},
		{ID: "x__send_mail", Name: "x__send_mail", Description: "Sends an email message.", Server: "x"},
		{ID: "x__read_file", Name: "x__read_file", Description: "Reads a file from disk.", Server: "x"},
		{ID: "x__create_user", Name: "x__create_user", Description: "Creates a user account.", Server: "x"},
		{ID: "x__take_screenshot", Name: "x__take_screenshot", Description: "Captures the screen as an image.", Server: "x"},
	}
	const q = "list the previous entries"
	if hits := search.New(docs).Search(q, 5); len(hits) < 2 || hits[0].ID != "x__list_config" || hits[0].Score != hits[1].Score {
		t.Errorf("without the semantic signal: %v, want x__list_config and x__list_recent tied (by ID)", hits)
	}
	hits := search.NewWith(docs, search.Options{Semantic: true}).Search(q, 5)
	if len(hits) == 0 || hits[0].ID != "x__list_recent" {
		t.Errorf("with the semantic signal: %v, want x__list_recent first", hits)
	}
	// The signal ranks, it does not answer: a request in words no tool
	// has gets no hits either way.
	if hits := search.NewWith(docs, search.Options{Semantic: true}).Search("previous", 5); len(hits) != 0 {
		t.Errorf("previous: %v, want no hits", hits)
	}
}

// TestSemanticWithoutVectors: a catalog in words the table lacks (another
// script, made-up words) and queries with or without vectors rank as
// without the signal, and nothing breaks.
func TestSemanticWithoutVectors(t *testing.T) {
	docs := []search.Doc{
		{ID: "a__検索", Name: "a__検索", Description: "ウェブを検索する", Server: "a"},
		{ID: "a__zqxj", Name: "a__zqxj", Description: "Qzxv the vbnm.", Server: "a"},
	}
	plain, sem := search.New(docs), search.NewWith(docs, search.Options{Semantic: true})
	for _, q := range []string{"検索", "zqxj the vbnm", "read the file", "", "previous"} {
		if diff := cmp.Diff(plain.Search(q, 5), sem.Search(q, 5)); diff != "" {
			t.Errorf("%q: with the semantic signal (-without +with):\n%s", q, diff)
		}
	}
}

// TestSemanticOffDecodesNothing: an index without the semantic signal never
// decodes the vector table nor the related forms, and one with it does. It runs in a child process
// of the test binary, so that no other test has decoded the table before.
func TestSemanticOffDecodesNothing(t *testing.T) {
	if os.Getenv("SEARCH_DECODE_CHILD") == "1" {
		docs := []search.Doc{{ID: "a__read_file", Name: "a__read_file", Description: "Reads a file.", Server: "a"}}
		search.New(docs).Search("read the file", 5)
		search.NewWith(docs, search.Options{}).Search("read the file", 5)
		if search.VectorsDecoded() || search.WordnetDecoded() {
			t.Fatalf("an index without the semantic signal decoded the vector table (%v) or the related forms (%v)",
				search.VectorsDecoded(), search.WordnetDecoded())
		}
		search.NewWith(docs, search.Options{Semantic: true}).Search("read the file", 5)
		if !search.VectorsDecoded() || !search.WordnetDecoded() {
			t.Fatalf("an index with the semantic signal did not decode the vector table (%v) or the related forms (%v)",
				search.VectorsDecoded(), search.WordnetDecoded())
		}
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSemanticOffDecodesNothing$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SEARCH_DECODE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSemanticOffDecodesNothing") {
		t.Fatalf("child test: %v\n%s", err, out)
	}
}

func BenchmarkNewSemantic(b *testing.B) {
	docs := loadEvalCatalog(b)
	search.NewWith(docs, search.Options{Semantic: true}) // the table's one-time decoding is not New's
	b.ReportAllocs()
	for b.Loop() {
		search.NewWith(docs, search.Options{Semantic: true})
	}
}

// BenchmarkSearchSemantic is the time of one query over the recorded catalog
// with the semantic signal.
func BenchmarkSearchSemantic(b *testing.B) {
	docs := loadEvalCatalog(b)
	qs := loadEvalQueries(b, docs)
	ix := search.NewWith(docs, search.Options{Semantic: true})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ix.Search(qs[i%len(qs)].Query, 5)
		i++
	}
}

// BenchmarkDecodeVectors is the one-time decoding of the embedded table.
func BenchmarkDecodeVectors(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		search.DecodeVectors()
	}
}

// TestRelatedForms: a request word that no tool uses matches the forms
// WordNet derives it from or to ("reviewers" → review), with the semantic
// options (the search surface's); a word some tool uses is not expanded.
func TestRelatedForms(t *testing.T) {
	docs := []search.Doc{
		{ID: "x__list_comments", Name: "x__list_comments", Description: "Lists the comments on a pull request.", Server: "x"},
		{ID: "x__list_reviews", Name: "x__list_reviews", Description: "Lists the reviews on a pull request.", Server: "x"},
		{ID: "x__get_weather", Name: "x__get_weather", Description: "Returns the weather forecast for a city.", Server: "x"},
		{ID: "x__send_mail", Name: "x__send_mail", Description: "Sends an email message.", Server: "x"},
		{ID: "x__read_file", Name: "x__read_file", Description: "Reads a file from disk.", Server: "x"},
		{ID: "x__create_user", Name: "x__create_user", Description: "Creates a user account.", Server: "x"},
	}
	with := search.NewWith(docs, search.Options{Semantic: true})
	off := search.SemanticKnobs
	off.Related = 0
	without := search.NewWithKnobs(docs, off)
	const q = "reviewers of pull request 7"
	if hits := with.Search(q, 5); len(hits) == 0 || hits[0].ID != "x__list_reviews" {
		t.Errorf("%q: %v, want x__list_reviews first", q, hits)
	}
	if hits := without.Search(q, 5); len(hits) > 0 && hits[0].ID == "x__list_reviews" {
		t.Errorf("%q without the related forms: %v; the test needs a request they change", q, hits)
	}
	for _, q := range []string{"list the reviews", "comments on the pull request", "send the weather"} {
		if diff := cmp.Diff(without.Search(q, 5), with.Search(q, 5)); diff != "" {
			t.Errorf("%q, in words the catalog uses: the related forms changed the hits (-without +with):\n%s", q, diff)
		}
	}
}

// BenchmarkDecodeWordnet is the one-time decoding of the related forms.
func BenchmarkDecodeWordnet(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		search.DecodeWordnet()
	}
}
