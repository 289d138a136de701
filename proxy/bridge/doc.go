// Package bridge carries a tools/call across the protocol eras: the sealed
// requestState handed to 2026-07-28 clients, and the calls of such clients
// parked on legacy servers while the clients answer the servers' questions
// in rounds of input (README "Bridges: what is translated, and the
// limits"). It decides nothing about routing, policy or visibility, and
// imports neither the proxy nor a face: what it needs from the root (the
// state key, the replica's name, the relay's method names) comes in its
// Options.
package bridge
