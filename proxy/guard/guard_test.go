package guard

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

var t0 = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

// anonymous is the key of an anonymous caller.
func anonymous() string { return "" }

func budgetDecision() policy.Decision {
	return policy.Decision{Visible: true, Limits: policy.Limits{Budgets: []policy.Budget{{
		Limit: 100, Window: time.Hour, From: policy.MustPointer("/structuredContent/credits"), Source: "policy/spend.toml:3",
	}}}}
}

func credits(n string) json.RawMessage {
	return json.RawMessage(`{"content":[],"structuredContent":{"credits":` + n + `}}`)
}

// TestBudgetWindow drives a budget through its sliding window with an
// injected clock: calls pass until the spends reach the limit, the next is
// refused with the time the budget returns, and it returns then.
func TestBudgetWindow(t *testing.T) {
	g := New(Options{})
	log := slog.New(slog.DiscardHandler)
	d := budgetDecision()
	steps := []struct {
		at          time.Duration // after t0
		spend       string        // the result's credits; "" = no call expected to pass
		wantRefused string        // a part of the refusal; "" = the call passes
	}{
		{at: 0, spend: "40"},
		{at: 10 * time.Minute, spend: "50"},
		{at: 20 * time.Minute, spend: "30"},
		// 120 spent: refused until the first spend (40) leaves the window.
		{at: 30 * time.Minute, wantRefused: "has spent 120 of its budget of 100 per 1h0m0s (counted from /structuredContent/credits of each result; policy/spend.toml:3); nothing was executed. Budget returns at 2026-12-01T19:00:00Z (in 30m0s)"},
		{at: 59*time.Minute + 59*time.Second, wantRefused: "in 1s"},
		{at: time.Hour, spend: "25"}, // 40 gone: 80 left in the window, now 105
		// Now the 50 and the 30 must leave before 25 is under 100.
		{at: time.Hour + time.Minute, wantRefused: "has spent 105 of its budget of 100 per 1h0m0s (counted from /structuredContent/credits of each result; policy/spend.toml:3); nothing was executed. Budget returns at 2026-12-01T19:10:00Z (in 9m0s)"},
		{at: time.Hour + 10*time.Minute, spend: "0"},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		outcome, text := g.Refuse(t.Context(), "web__search", d, nil, anonymous, now)
		switch {
		case st.wantRefused == "" && outcome != "":
			t.Fatalf("at +%s: refused (%s): %s", st.at, outcome, text)
		case st.wantRefused != "" && (outcome != "budget spent" || !strings.Contains(text, st.wantRefused)):
			t.Fatalf("at +%s: outcome %q, text %q; want a refusal with %q", st.at, outcome, text, st.wantRefused)
		case st.wantRefused == "":
			g.CountSpend(t.Context(), log, "web__search", d, credits(st.spend), anonymous, now)
		}
	}
}

// TestBudgetHostileValues checks that no value a server reports refills a
// budget or breaks the sums: negative and non-numbers count nothing (or
// the configured missing), huge numbers count the whole limit.
func TestBudgetHostileValues(t *testing.T) {
	tests := []struct {
		name    string
		results []json.RawMessage
		missing float64
		want    []float64 // the window's total after each result
	}{
		{name: "negative counts 0", results: []json.RawMessage{credits("60"), credits("-1000"), credits("30")}, want: []float64{60, 60, 90}},
		{name: "huge counts the limit", results: []json.RawMessage{credits("1e400"), credits("-1e400")}, want: []float64{100, 100}},
		{name: "over the limit counts the limit", results: []json.RawMessage{credits("250")}, want: []float64{100}},
		{name: "string and missing count 0", results: []json.RawMessage{credits(`"99"`), json.RawMessage(`{"content":[]}`), json.RawMessage(`not json`)}, want: []float64{0, 0, 0}},
		{name: "missing counts the default", missing: 7, results: []json.RawMessage{credits("null"), json.RawMessage(`{"content":[]}`), credits("2")}, want: []float64{7, 14, 16}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(Options{})
			log := slog.New(slog.DiscardHandler)
			d := budgetDecision()
			d.Limits.Budgets[0].Missing = tt.missing
			var got []float64
			for i, r := range tt.results {
				lines := g.CountSpend(t.Context(), log, "web__search", d, r, anonymous, t0.Add(time.Duration(i)*time.Second))
				got = append(got, lines[0].Spent)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgLimits(t *testing.T) {
	d := policy.Decision{Visible: true, Limits: policy.Limits{Args: []policy.ArgLimit{
		{Kind: policy.MaxItems, At: policy.MustPointer("/paths"), N: 2, Source: "p.toml:4"},
		{Kind: policy.MaxLength, At: policy.MustPointer("/query"), N: 5, Source: "p.toml:5"},
		{Kind: policy.Max, At: policy.MustPointer("/opts/count"), N: 10, Source: "p.toml:6"},
	}}}
	tests := []struct {
		name string
		args string
		want string // the refusal; "" = passes
	}{
		{name: "within", args: `{"paths":["a","b"],"query":"héllo","opts":{"count":10}}`},
		{name: "absent", args: `{}`},
		{name: "no arguments", args: ``},
		{name: "too many items", args: `{"paths":["a","b","c"]}`,
			want: `argument limit: argument /paths has 3 items, more than the limit of 2: args.max_items "/paths" = 2 (p.toml:4); nothing was executed. Call files__read with a smaller value (for example split the work into several calls)`},
		{name: "string too long in code points", args: `{"query":"héllo!"}`,
			want: `argument limit: argument /query is 6 characters long, more than the limit of 5: args.max_length "/query" = 5 (p.toml:5); nothing was executed. Call files__read with a smaller value (for example split the work into several calls)`},
		{name: "escaped string decoded before counting", args: `{"query":"\u0061\u0062\u0063\u0064\u0065\u0066"}`,
			want: `argument /query is 6 characters long`},
		{name: "number too large", args: `{"opts":{"count":1e400}}`,
			want: `argument /opts/count is 1e400, more than the limit of 10`},
		{name: "number slightly too large", args: `{"opts":{"count":10.5}}`,
			want: `argument /opts/count is 10.5, more than the limit of 10`},
		{name: "wrong type refused", args: `{"paths":"a,b,c"}`,
			want: `argument /paths is a string, but args.max_items "/paths" = 2 (p.toml:4) bounds an array`},
		{name: "duplicate key refused", args: `{"paths":[],"paths":["a","b","c"]}`,
			want: `the arguments of files__read could not be checked: the key "paths" appears twice in one object`},
		{name: "duplicate key deep refused", args: `{"opts":{"count":1,"count":99}}`,
			want: `the key "count" appears twice in one object`},
		{name: "invalid JSON refused", args: `{"paths":[}`, want: `could not be checked: invalid JSON`},
		{name: "trailing data refused", args: `{} {}`, want: `unexpected data after the arguments`},
	}
	g := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcome, text := g.Refuse(t.Context(), "files__read", d, json.RawMessage(tt.args), anonymous, t0)
			if tt.want == "" {
				if outcome != "" {
					t.Fatalf("refused: %s", text)
				}
				return
			}
			if outcome != "argument limit" || !strings.Contains(text, tt.want) {
				t.Errorf("outcome %q, text %q; want an argument limit with %q", outcome, text, tt.want)
			}
		})
	}
}

func TestMemoryLedgerOrder(t *testing.T) {
	l := &memoryLedger{}
	l.Add(t.Context(), "k", 1, t0.Add(2*time.Second))
	l.Add(t.Context(), "k", 2, t0) // the clock stepped back
	l.Add(t.Context(), "k", 3, t0.Add(time.Second))
	want := []Spend{{At: t0.Add(time.Second), Amount: 3}, {At: t0.Add(2 * time.Second), Amount: 1}}
	got, _ := l.Since(t.Context(), "k", t0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Since (-want +got):\n%s", diff)
	}
	if got, _ := l.Since(t.Context(), "k", t0.Add(time.Hour)); got != nil {
		t.Errorf("Since after every spend = %v, want none", got)
	}
	if len(l.spends) != 0 {
		t.Errorf("the ledger keeps %d empty keys", len(l.spends))
	}
}
