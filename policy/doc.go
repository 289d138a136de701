// Package policy makes Manifold's pure decisions: which tools, prompts,
// resources and resource templates a client may see and use, with which
// limits, and why. One function, [Rules.Decide], serves both list-time
// visibility and call-time enforcement, so a hidden tool called by name is
// refused exactly like an unknown one.
//
// A [Rules] value gathers what the operator wrote:
//
//   - per server (proxy.toml [servers.NAME]): tools.allow / tools.deny,
//     prompts.allow / prompts.deny and resources.allow / resources.deny,
//     globs on the server's ORIGINAL names and URIs; deny wins, and a
//     non-empty allow list hides whatever it does not match;
//   - read-only mode (read_only = true, per server or top-level): only tools
//     whose effective readOnlyHint is true are exposed. Annotations are
//     untrusted claims and an absent readOnlyHint means false, so an
//     unannotated tool is not read-only;
//   - per-tool overrides (rename, title, description, annotations), which
//     are what clients see and what read-only mode trusts; annotations =
//     "ignore" makes a server's own hints count for nothing;
//   - the policy files' rules, globs on EXPOSED names (match) or exposed URIs
//     (uri) that deny or allow, the most specific matching rule deciding,
//     and set limits: call_timeout, max_result_bytes, rate. They can hide
//     more than proxy.toml does, never less.
//
// Resources are decided on their canonical URIs ([CanonicalURI]), and the
// resource globs are meant to be canonical too ([CanonicalURIGlob]), so that
// no spelling of a URI an upstream reads as the same resource escapes a rule.
//
// Every setting carries its source (file:line), and a [Decision] names the
// rule that made it, so `manifold explain` can cite it ([Decision.String]).
// Globs are described at [Match]. (Redacting tool arguments for the audit
// log is package internal/redact's job.)
//
// The package must stay pure: no I/O, no goroutines, no clocks, no SDK types,
// nothing but the standard library (internal/archtest enforces the imports).
// Loading the rules is internal/config's job; enforcing limits (timers, rate
// counters, result sizes) and writing the audit log are the proxy's.
package policy
