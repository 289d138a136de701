package config

import (
	"time"

	"github.com/manifold-mcp/manifold/policy"
)

// This file decodes the keys of approval bound to the call (README
// "Approval bound to the call"):
//
//	confirm_ttl = "5m"                 # top level: how long a person has to answer
//
//	[servers.bank]
//	confirm = true                     # every call of the server's tools
//	confirm_reason = "moves money"
//
//	[servers.files.overrides.write_file]
//	confirm = true                     # one tool
//	reason = "writes to the disk"
//
// and in a policy file, confirm = true with the rule's reason.

// DefaultConfirmTTL is confirm_ttl's default, applied by the proxy.
const DefaultConfirmTTL = 5 * time.Minute

// confirm decodes the confirm key of t and the key that holds its reason
// (reasonKey). A reason without confirm = true is an error, since it would
// read as if it asked for approval.
func (d *decoder) confirm(t *table, reasonKey string) policy.Confirmation {
	var c policy.Confirmation
	if on, ok := t.boolean("confirm"); ok && on {
		c.Confirm, c.Source = true, d.source(t.fields["confirm"])
	}
	if r, ok := t.str(reasonKey); ok {
		c.Reason = r
		if !c.Confirm {
			t.errorf(reasonKey, "%s is set but confirm is not true; add confirm = true, or remove %s", reasonKey, reasonKey)
		}
	}
	return c
}

// confirmTTL decodes the top-level confirm_ttl; zero when absent (the
// proxy's default, DefaultConfirmTTL).
func (d *decoder) confirmTTL(root *table) time.Duration {
	ttl := root.duration("confirm_ttl", 0)
	if ttl != 0 && (ttl < time.Second || ttl > 24*time.Hour) {
		root.errorf("confirm_ttl", "%s is out of range; use 1s to 24h, like \"5m\" (the default)", ttl)
		return 0
	}
	return ttl
}
