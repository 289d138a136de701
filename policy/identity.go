package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Identity is who asks for a decision ([Item.Who]): the authenticated
// caller of an HTTP request. The zero Identity is anonymous (stdio, or HTTP
// without authentication): no who-rule matches it, so it gets exactly the
// rules written for everyone.
type Identity struct {
	// User is the subject (sub claim) of a JWT access token; empty for an
	// API key. "user:NAME" matches it.
	User string
	// Key is the name of the API key presented; empty for a token.
	// "key:NAME" matches it.
	Key string
	// Groups are the token's groups and roles claims, or the key's groups.
	// "group:NAME" (and its synonym "role:NAME") matches any of them.
	Groups []string

	// bound, when not zero, makes the identity stand for every possible
	// caller at once (Widest, Narrowest).
	bound int
}

const (
	boundWidest = iota + 1
	boundNarrowest
)

// Widest and Narrowest stand for every caller at once, for a catalog built
// before anyone asks: with Widest, every who-rule that allows matches and no
// who-rule that hides does, so an item hidden for Widest is hidden for every
// identity; with Narrowest the other way round, so an item visible for
// Narrowest is visible for every identity. An item whose visibility differs
// between the two depends on who asks.
var (
	Widest    = Identity{bound: boundWidest}
	Narrowest = Identity{bound: boundNarrowest}
)

// IsAnonymous reports whether id is the anonymous identity.
func (id Identity) IsAnonymous() bool {
	return id.bound == 0 && id.User == "" && id.Key == "" && len(id.Groups) == 0
}

// String names id as the principals that match it would: "user:alice
// group:eng", "key:ci-bot", "anonymous".
func (id Identity) String() string {
	switch id.bound {
	case boundWidest:
		return "(widest)"
	case boundNarrowest:
		return "(narrowest)"
	}
	var parts []string
	if id.User != "" {
		parts = append(parts, "user:"+id.User)
	}
	if id.Key != "" {
		parts = append(parts, Principal{Kind: PrincipalKey, Name: id.Key}.String())
	}
	for _, g := range id.Groups {
		parts = append(parts, "group:"+g)
	}
	if len(parts) == 0 {
		return "anonymous"
	}
	return strings.Join(parts, " ")
}

// Principal kinds: what a who entry's prefix names.
const (
	PrincipalUser  = "user"
	PrincipalKey   = "key"
	PrincipalGroup = "group"
)

// Principal is one entry of a rule's who list: a kind and an exact name.
type Principal struct {
	Kind string // PrincipalUser, PrincipalKey or PrincipalGroup
	Name string
}

// String writes p as a who entry would: "group:eng", "user:alice@…"; a
// key's name is quoted, key:"ci-bot", since output redaction takes
// "key:VALUE" for a credential and would mask it.
func (p Principal) String() string {
	if p.Kind == PrincipalKey {
		return p.Kind + ":" + strconv.Quote(p.Name)
	}
	return p.Kind + ":" + p.Name
}

// maxPrincipalLen bounds a who entry.
const maxPrincipalLen = 512

// ParsePrincipal parses one who entry: "user:SUBJECT" (a JWT's sub),
// "key:NAME" (an API key's name), "group:NAME" or its synonym "role:NAME"
// (a value of the token's groups or roles claim, or of the key's groups:
// they are one set). The name is compared exactly, case and all; it may hold
// ":" (everything after the first one is the name). Globs are refused: an
// identity is a security principal, and a pattern such as "user:*@corp"
// would also match subjects that only look alike.
func ParsePrincipal(s string) (Principal, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok {
		return Principal{}, fmt.Errorf(`%q has no prefix; write "user:SUBJECT", "group:NAME", "role:NAME", or "key:" followed by the API key's name`, s)
	}
	switch kind {
	case "user":
		kind = PrincipalUser
	case "key":
		kind = PrincipalKey
	case "group", "role":
		kind = PrincipalGroup
	default:
		return Principal{}, fmt.Errorf(`%q: unknown prefix %q; write "user:SUBJECT", "group:NAME", "role:NAME", or "key:" followed by the API key's name`, s, kind+":")
	}
	switch {
	case name == "":
		return Principal{}, fmt.Errorf("%q names no one; write the name after %q", s, kind+":")
	case len(name) > maxPrincipalLen:
		return Principal{}, fmt.Errorf("%.40q… is longer than %d bytes", s, maxPrincipalLen)
	case strings.ContainsAny(name, "*?["):
		return Principal{}, fmt.Errorf("%q holds a glob character (*, ? or [): who entries are exact names, not patterns; list each user, key or group", s)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }):
		return Principal{}, fmt.Errorf("%q holds a control character or invalid UTF-8; write the name as the identity provider sends it", s)
	case strings.TrimSpace(name) != name:
		return Principal{}, fmt.Errorf("%q has spaces around the name; remove them", s)
	}
	return Principal{Kind: kind, Name: name}, nil
}

// In reports whether id is one of who: its user, key or one of its groups
// is listed. The anonymous identity is in no list.
func (id Identity) In(who []Principal) bool {
	for _, p := range who {
		switch p.Kind {
		case PrincipalUser:
			if id.User != "" && id.User == p.Name {
				return true
			}
		case PrincipalKey:
			if id.Key != "" && id.Key == p.Name {
				return true
			}
		case PrincipalGroup:
			if slices.Contains(id.Groups, p.Name) {
				return true
			}
		}
	}
	return false
}

// applies reports whether a rule with the who list who applies to id: a
// rule without who applies to everyone; a who-rule to the identities it
// lists. narrows says whether the rule can only hide (deny, read_only): the
// bounds Widest and Narrowest take the who-rules that widen, respectively
// narrow, what is visible.
func (id Identity) applies(who []Principal, narrows bool) bool {
	if who == nil {
		return true
	}
	switch id.bound {
	case boundWidest:
		return !narrows
	case boundNarrowest:
		return narrows
	}
	return id.In(who)
}

// HasWho reports whether any rule has a who list: only then can a decision
// depend on who asks.
func (r *Rules) HasWho() bool {
	if r == nil {
		return false
	}
	for _, rs := range [][]Rule{r.TableRules, r.FileRules} {
		for i := range rs {
			if rs[i].Who != nil {
				return true
			}
		}
	}
	return false
}
