// Package era holds the pure pieces of the translation between the two MCP
// protocol eras at the proxy's faces: the initialize era (2024-11-05 …
// 2025-11-25, "legacy") and 2026-07-28 ("modern": no initialize, every
// request carries its version and client capabilities in _meta).
//
// It decides nothing about routing, policy or sessions and starts no
// goroutines: each function takes what the face has (a schema, a _meta
// object, a raw result) and returns its translation. The proxy calls it where
// a request enters and a result leaves (ARCHITECTURE §"Protocol versions").
package era
