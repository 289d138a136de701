package era

import "time"

// ListTTL is how long a modern client may cache a list or server/discover
// answer once every server's initial start has finished. A stateless modern
// client learns of a change only through subscriptions/listen (list_changed
// does not reach it otherwise), so the TTL bounds how long one that does not
// listen keeps a stale catalog: a minute keeps a restarted or reloaded
// server's tools from being missed for long, while a client that lists
// before each turn does not list again more than once a minute.
const ListTTL = time.Minute

// Scope values of cacheScope.
const (
	ScopePublic  = "public"
	ScopePrivate = "private"
)

// ListCache returns the cache fields of a list answer for a modern client:
// private when the policy hid any item of the list (the list then depends on
// who asks, and a shared cache must not serve it to another), else public;
// a TTL of zero (immediately stale) while servers are still starting, since
// the list is not yet complete, else ListTTL.
func ListCache(narrowed, ready bool) (ttlMs int, scope string) {
	scope = ScopePublic
	if narrowed {
		scope = ScopePrivate
	}
	if !ready {
		return 0, scope
	}
	return int(ListTTL / time.Millisecond), scope
}
