package config

// This file decodes the spend cap and argument limits of a policy file
// rule:
//
//	[rules.paid_search]
//	match = "web__search"
//	budget = { limit = 100, window = "1h", from = "/structuredContent/credits", missing = 1 }
//	args.max_items = { "/paths" = 10 }       # JSON pointers into the arguments
//	args.max_length = { "/query" = 200 }     # characters (Unicode code points)
//	args.max = { "/count" = 50 }

import (
	"math"
	"slices"

	"github.com/manifold-mcp/manifold/policy"
)

// budget decodes the budget table of the rule t, if any.
func (d *decoder) budget(t *table) policy.Budget {
	bt, ok := t.tableOf("budget", `a table such as { limit = 100, window = "1h", from = "/structuredContent/credits" }`)
	if !ok {
		return policy.Budget{}
	}
	b := policy.Budget{Source: d.source(t.fields["budget"])}
	if f, ok := bt.amount("limit"); ok {
		if !(f > 0) || math.IsInf(f, 0) {
			bt.errorf("limit", "%v is not a positive amount; write the most that calls may spend per window, like limit = 100", f)
		} else {
			b.Limit = f
		}
	} else if !bt.has("limit") {
		bt.errorHere("limit is not set; write the most that calls may spend per window, like limit = 100")
	}
	b.Window = bt.duration("window", 0)
	if !bt.has("window") {
		bt.errorHere(`window is not set; write the length of the window over which spends add up, like window = "1h"`)
	}
	if s, ok := bt.str("from"); ok {
		p, err := policy.ParsePointer(s)
		switch tok := p.Tokens(); {
		case err != nil:
			bt.errorf("from", "%v", err)
		case len(tok) < 2 || tok[0] != "structuredContent" && tok[0] != "_meta":
			bt.errorf("from", `%q does not point at a member of structuredContent or _meta of the result; write it like "/structuredContent/credits" or "/_meta/credits_charged"`, s)
		default:
			b.From = p
		}
	} else if !bt.has("from") {
		bt.errorHere(`from is not set; write the JSON pointer to the number each result reports, like from = "/structuredContent/credits"`)
	}
	if f, ok := bt.amount("missing"); ok {
		if !(f >= 0) || math.IsInf(f, 0) {
			bt.errorf("missing", "%v is not an amount of 0 or more; write what a result without the number counts, like missing = 1", f)
		} else {
			b.Missing = f
		}
	}
	bt.finish()
	return b
}

// argLimits decodes the args table of the rule t, if any.
func (d *decoder) argLimits(t *table) []policy.ArgLimit {
	at, ok := t.tableOf("args", `a table such as { max_items = { "/paths" = 10 } }`)
	if !ok {
		return nil
	}
	var out []policy.ArgLimit
	for _, kind := range []policy.ArgKind{policy.MaxItems, policy.MaxLength, policy.Max} {
		kt, ok := at.tableOf(kind.Key(), `a table of JSON pointers into the arguments and limits, such as { "/paths" = 10 }`)
		if !ok {
			continue
		}
		for _, key := range d.byPosition(kt.fields) {
			n, ok := kt.amount(key)
			if !ok {
				continue
			}
			p, err := policy.ParsePointer(key)
			if err != nil || p == "" {
				kt.errorf(key, `%q is not a JSON pointer to an argument; write it like "/paths" (an argument) or "/options/limit" (a member of one), with "~1" for a "/" in a name and "~0" for a "~"`, key)
				continue
			}
			whole := kind != policy.Max
			switch {
			case math.IsInf(n, 0) || math.IsNaN(n):
				kt.errorf(key, "%v is not a limit; write a finite number", n)
				continue
			case whole && (n < 0 || n != math.Trunc(n)):
				kt.errorf(key, "%v is not a whole number of 0 or more; write the most %s allowed, like %q = 10", n, map[bool]string{true: "items", false: "characters"}[kind == policy.MaxItems], key)
				continue
			}
			out = append(out, policy.ArgLimit{Kind: kind, At: p, N: n, Source: d.source(kt.fields[key])})
		}
		kt.finish()
	}
	at.finish()
	return slices.Clip(out)
}

// amount decodes a number, integer or float.
func (t *table) amount(name string) (float64, bool) {
	v, ok := t.value(name)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	t.mismatch(name, v, "a number", unquote(v))
	return 0, false
}
