// Package wire reads and writes raw JSON-RPC bytes for the proxy's lean
// paths: it checks a downstream line (Check), splits and joins a request's
// params and finds members without decoding them, tags and restores the ids
// of requests relayed across replicas, and writes whole responses. It holds
// no state of a server or session and knows no SDK types: it is pure byte
// work, stdlib and internal/jsonscan only.
package wire
