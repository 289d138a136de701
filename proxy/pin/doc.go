// Package pin pins what upstream servers say about themselves: it reduces a
// tool, prompt or resource template definition, or a server's instructions,
// to a canonical form and a fingerprint (normalise), keeps the approved ones
// in a lock (Lock, Parse, Format: the text of manifold.lock), shows what
// changed in a readable diff (Diff), and flags text that tries to steer the
// model (Scan: instruction-like rules) or to pass for another server's tool
// (Shadows).
//
// It is pure: no I/O, no SDK types, standard library only. The proxy decides
// what to hide with it; cmd/manifold reads and writes the lock file.
package pin
