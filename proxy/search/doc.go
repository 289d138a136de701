// Package search ranks catalog entries (tools) against a request in words, for
// the search surface.
//
// An Index is built once from a catalog snapshot (New) and is immutable, so any
// number of goroutines may Search it. The ranking is BM25F: each field of a
// Doc (name, title, description, parameters, server) is tokenised on word,
// snake_case, kebab-case, camelCase and digit boundaries, case-folded, stemmed
// lightly and weighted; a query word also matches a small table of generic
// synonyms at a lower weight. Search returns no hits when the best entry covers
// too little of the query's weight (its rare words), so the caller can say
// plainly that no tool matches instead of offering a wrong one.
//
// The package is pure: standard library only, no SDK types, no I/O, no
// goroutines. It knows nothing of policy; the caller indexes only what the
// client may see.
package search
