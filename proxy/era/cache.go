package era

import (
	"bytes"
	"time"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

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

// DropCacheFields returns the JSON object b without its top-level members
// ttlMs and cacheScope, the 2026-07-28 cache fields that go-sdk's result
// types always encode, for a client of the initialize era; b itself when
// it has neither. b may end inside its last member's value (a result
// encoded up to its tools, whose bytes follow): what follows the last
// member read is kept as is.
func DropCacheFields(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"ttlMs"`)) && !bytes.Contains(b, []byte(`"cacheScope"`)) {
		return b
	}
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return b
	}
	out := append(make([]byte, 0, len(b)), b[:i+1]...)
	i = jsonscan.SkipSpace(b, i+1)
	first := true
	for i < len(b) && b[i] == '"' {
		start := i
		kend := jsonscan.SkipString(b, i)
		key := string(b[i+1 : max(kend-1, i+1)])
		j := jsonscan.SkipSpace(b, kend)
		if j < len(b) && b[j] == ':' {
			j = jsonscan.SkipSpace(b, j+1)
		}
		vend := jsonscan.SkipValue(b, j)
		member := b[start:vend]
		i = jsonscan.SkipSpace(b, vend)
		comma := i < len(b) && b[i] == ','
		if comma {
			i = jsonscan.SkipSpace(b, i+1)
		}
		if key == "ttlMs" || key == "cacheScope" {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		out = append(out, member...)
		first = false
		if !comma {
			break
		}
	}
	return append(out, b[i:]...)
}
