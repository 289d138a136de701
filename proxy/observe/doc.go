// Package observe turns what the proxy saw of one request into the three
// things it is observed by: the audit line, the metrics and the spans. The
// call paths hand one Record to one Observer, which the root builds from
// its options. It knows nothing of the root (package proxy), the faces or
// the catalog: what it needs of a session, an identity or the catalog comes
// as plain values on the Record or as a function given to New.
package observe
