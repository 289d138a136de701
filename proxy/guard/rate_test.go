package guard

import (
	"testing"

	"github.com/manifold-mcp/manifold/policy"
)

func TestRateAndSpendKeys(t *testing.T) {
	alice := func() string { return "jwt:i alice" }
	bob := func() string { return "jwt:i bob" }
	own := policy.Limits{}
	shared := policy.Limits{RateShared: true}
	if rateKey("t", own, alice) == rateKey("t", own, bob) {
		t.Error("alice and bob share a rate bucket by default")
	}
	if rateKey("t", shared, alice) != rateKey("t", shared, bob) || rateKey("t", shared, alice) != "t" {
		t.Error(`per = "all" does not share one bucket`)
	}
	if rateKey("t", own, anonymous) != "t" {
		t.Error("anonymous callers do not share the item's bucket as before")
	}
	if spendWho(policy.Budget{}, alice) == spendWho(policy.Budget{}, bob) {
		t.Error("alice and bob share a budget by default")
	}
	if spendWho(policy.Budget{Shared: true}, alice) != "" || spendWho(policy.Budget{}, anonymous) != "" {
		t.Error("a shared budget or an anonymous caller has an identity part")
	}
}
