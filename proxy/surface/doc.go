// Package surface decides which tool list each client gets (its catalog
// mode) and holds the search surface of one catalog: the meta-tools, the
// always tools, the search index (proxy/search) and the encoder's.
//
// It must not know the root (package proxy), a face or the catalog room:
// a catalog's visible tools reach it as plain values, and serving a search
// or a call through it is the root's.
package surface
