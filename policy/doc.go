// Package policy makes Manifold's pure decisions: which tools, prompts and resources
// a caller may see and call, by allow/deny globs, read-only mode, per-tool overrides
// and limits, each decision explainable by the rule that made it.
//
// It must stay pure: no I/O, no goroutines, no SDK types, and nothing but the
// standard library (internal/archtest enforces the imports). Callers load the
// rules and hand them in; the same decision function serves list-time visibility
// and call-time enforcement.
package policy
