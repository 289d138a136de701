// Package wire reads and writes raw JSON-RPC bytes for the proxy's lean
// paths: it checks a downstream line (Check), splits and joins a request's
// params and finds members without decoding them, tags and restores the ids
// of requests relayed across replicas, and builds a response and writes it
// whole. It holds no state of a server or session and knows no SDK types:
// stdlib and internal/jsonscan only.
package wire
