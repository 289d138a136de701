package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// This file holds the spend caps and argument limits of the policy files'
// rules: what they are and how a value is judged against them. Counting
// spends over time is the proxy's job (it has the clock).

// Budget caps what calls of one tool spend over a sliding window: at most
// Limit units in any Window, each call counting the number its result
// reports at From. The zero Budget is no cap.
type Budget struct {
	Limit  float64
	Window time.Duration
	// From points into the tools/call result: "/structuredContent/..." or
	// "/_meta/...".
	From Pointer
	// Missing is what a result without a usable number at From counts. If
	// zero, such a result counts nothing (and the proxy logs a warning).
	Missing float64
	// Source is where the budget was written ("file:line").
	Source string
	// Shared makes every identity spend from one budget (per = "all");
	// by default each identity has its own.
	Shared bool
}

// IsZero reports whether b is no cap.
func (b Budget) IsZero() bool { return !(b.Limit > 0) || b.Window <= 0 }

// String describes b: `100 per 1h0m0s from /structuredContent/credits`.
func (b Budget) String() string {
	return fmt.Sprintf("%s per %s from %s", FormatAmount(b.Limit), b.Window, b.From)
}

// FormatAmount formats a spend without a needless fraction: 3, 2.5.
func FormatAmount(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// SpendOf returns what the result (a decoded tools/call result) spends
// against b, and a note when the result gave no honest number, for the
// log. A server is not trusted to refill a budget: a negative number counts
// 0; a number over the limit (infinity too) counts the whole limit, which
// keeps every sum finite; a value that is not a number, or no value, counts
// b.Missing.
func (b Budget) SpendOf(result any) (float64, string) {
	v, ok := b.From.Resolve(result)
	if !ok {
		return b.Missing, fmt.Sprintf("the result has no value at %s; counted %s", b.From, FormatAmount(b.Missing))
	}
	f, ok := number(v)
	switch {
	case !ok:
		return b.Missing, fmt.Sprintf("the value at %s is %s, not a number; counted %s", b.From, jsonType(v), FormatAmount(b.Missing))
	case math.IsNaN(f):
		return b.Limit, fmt.Sprintf("the value at %s is not a number; counted the whole limit", b.From)
	case f < 0:
		return 0, fmt.Sprintf("the value at %s is negative (%s); counted 0: a spend never refills a budget", b.From, FormatAmount(f))
	case f > b.Limit:
		return b.Limit, fmt.Sprintf("the value at %s (%s) is more than the limit; counted the whole limit, %s", b.From, FormatAmount(f), FormatAmount(b.Limit))
	}
	return f, ""
}

// number returns the value of a JSON number; a number too large for a
// float64 is an infinity of its sign.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// ArgKind is the kind of an [ArgLimit].
type ArgKind int

// Kinds of argument limits.
const (
	// MaxItems bounds the number of elements of an array.
	MaxItems ArgKind = iota + 1
	// MaxLength bounds the length of a string, in Unicode code points.
	MaxLength
	// Max bounds a number from above.
	Max
)

// Key returns the kind's key in a rule's args table.
func (k ArgKind) Key() string {
	switch k {
	case MaxItems:
		return "max_items"
	case MaxLength:
		return "max_length"
	case Max:
		return "max"
	}
	return fmt.Sprintf("ArgKind(%d)", int(k))
}

// ArgLimit bounds one argument of a call, checked before it is forwarded.
type ArgLimit struct {
	Kind ArgKind
	// At points into the call's arguments object: "/paths".
	At Pointer
	// N is the limit: a number of items or code points (whole), or the
	// largest number allowed.
	N      float64
	Source string
}

// String describes l: `args.max_items "/paths" = 10`.
func (l ArgLimit) String() string {
	return fmt.Sprintf("args.%s %q = %s", l.Kind.Key(), l.At, FormatAmount(l.N))
}

// Check judges the decoded arguments of a call against l and returns why
// the call is refused, or "" when it passes. An argument that is absent
// passes (there is nothing to bound; a required one is the tool's schema's
// business); one of the wrong type is refused, since it could not be
// checked.
func (l ArgLimit) Check(args any) string {
	v, ok := l.At.Resolve(args)
	if !ok {
		return ""
	}
	where := fmt.Sprintf("%s (%s)", l, l.Source)
	if l.Source == "" {
		where = l.String()
	}
	switch l.Kind {
	case MaxItems:
		a, isArray := v.([]any)
		if !isArray {
			return fmt.Sprintf("argument %s is %s, but %s bounds an array", l.At, jsonType(v), where)
		}
		if float64(len(a)) > l.N {
			return fmt.Sprintf("argument %s has %d items, more than the limit of %s: %s", l.At, len(a), FormatAmount(l.N), where)
		}
	case MaxLength:
		s, isString := v.(string)
		if !isString {
			return fmt.Sprintf("argument %s is %s, but %s bounds a string", l.At, jsonType(v), where)
		}
		if n := utf8.RuneCountInString(s); float64(n) > l.N {
			return fmt.Sprintf("argument %s is %d characters long, more than the limit of %s: %s", l.At, n, FormatAmount(l.N), where)
		}
	case Max:
		f, isNumber := number(v)
		if !isNumber {
			return fmt.Sprintf("argument %s is %s, but %s bounds a number", l.At, jsonType(v), where)
		}
		if !(f <= l.N) {
			shown := FormatAmount(f)
			if n, ok := v.(json.Number); ok {
				shown = string(n)
			}
			return fmt.Sprintf("argument %s is %s, more than the limit of %s: %s", l.At, shown, FormatAmount(l.N), where)
		}
	default:
		return fmt.Sprintf("%s is not a known kind of argument limit", where)
	}
	return ""
}
