// Package surface decides which tool list each client gets (its catalog
// mode) and holds the search surface of one catalog: the meta-tools, the
// always tools, the search index (proxy/search) and the encoder's.
//
// It answers the meta-tools' searches and descriptions and checks their
// arguments (serve.go); calling a tool through a call tool is the root's,
// which owns the call pipeline.
//
// It must not know the root (package proxy), a face or the catalog room:
// a catalog's visible tools reach it as plain values, and what it needs of
// the catalog in force as the small Catalog interface.
package surface
