package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func decodeNumbers(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPointer(t *testing.T) {
	doc := `{"a":{"b/c":[10,{"~d":"x"}]},"":1,"0":"zero"}`
	tests := []struct {
		pointer string
		want    any
		found   bool
		wantErr string
	}{
		{pointer: "/a/b~1c/0", want: json.Number("10"), found: true},
		{pointer: "/a/b~1c/1/~0d", want: "x", found: true},
		{pointer: "/", want: json.Number("1"), found: true},
		{pointer: "/0", want: "zero", found: true},
		{pointer: "", want: decodeNumbers(t, doc), found: true},
		{pointer: "/a/b~1c/01"},
		{pointer: "/a/b~1c/-"},
		{pointer: "/a/b~1c/2"},
		{pointer: "/a/b~1c/1/~0d/deeper"},
		{pointer: "/missing"},
		{pointer: "a/b", wantErr: `"a/b" is not a JSON pointer: it must start with "/", like "/structuredContent/credits"`},
		{pointer: "/a~2", wantErr: `"/a~2" is not a JSON pointer: "~" must be followed by 0 (for "~") or 1 (for "/")`},
		{pointer: "/a~", wantErr: `"/a~" is not a JSON pointer: "~" must be followed by 0 (for "~") or 1 (for "/")`},
	}
	v := decodeNumbers(t, doc)
	for _, tt := range tests {
		t.Run(tt.pointer, func(t *testing.T) {
			p, err := ParsePointer(tt.pointer)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParsePointer(%q) error = %v, want %q", tt.pointer, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, found := p.Resolve(v)
			if found != tt.found {
				t.Fatalf("Resolve found = %v, want %v", found, tt.found)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpendOf(t *testing.T) {
	b := Budget{Limit: 100, Window: time.Hour, From: MustPointer("/structuredContent/credits"), Missing: 2}
	tests := []struct {
		name     string
		result   string
		want     float64
		wantNote string
	}{
		{name: "number", result: `{"structuredContent":{"credits":12.5}}`, want: 12.5},
		{name: "zero", result: `{"structuredContent":{"credits":0}}`, want: 0},
		{name: "missing", result: `{"content":[]}`, want: 2, wantNote: "the result has no value at /structuredContent/credits; counted 2"},
		{name: "string", result: `{"structuredContent":{"credits":"5"}}`, want: 2, wantNote: "the value at /structuredContent/credits is a string, not a number; counted 2"},
		{name: "negative", result: `{"structuredContent":{"credits":-50}}`, want: 0, wantNote: "the value at /structuredContent/credits is negative (-50); counted 0: a spend never refills a budget"},
		{name: "negative zero", result: `{"structuredContent":{"credits":-0}}`, want: 0},
		{name: "over the limit", result: `{"structuredContent":{"credits":1000}}`, want: 100, wantNote: "the value at /structuredContent/credits (1000) is more than the limit; counted the whole limit, 100"},
		{name: "too large for a float", result: `{"structuredContent":{"credits":1e999}}`, want: 100, wantNote: "the value at /structuredContent/credits (+Inf) is more than the limit; counted the whole limit, 100"},
		{name: "too negative for a float", result: `{"structuredContent":{"credits":-1e999}}`, want: 0, wantNote: "the value at /structuredContent/credits is negative (-Inf); counted 0: a spend never refills a budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := b.SpendOf(decodeNumbers(t, tt.result))
			if got != tt.want || note != tt.wantNote {
				t.Errorf("SpendOf = %v, %q; want %v, %q", got, note, tt.want, tt.wantNote)
			}
		})
	}
	// A float64 NaN cannot come from JSON, but counts the whole limit.
	if got, _ := b.SpendOf(map[string]any{"structuredContent": map[string]any{"credits": nan()}}); got != 100 {
		t.Errorf("SpendOf(NaN) = %v, want the limit", got)
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

// TestDecideGuards checks that budgets and argument limits of every
// matching rule reach the decision, and that label_results is decided per
// server over the top-level setting.
func TestDecideGuards(t *testing.T) {
	off := false
	budget := Budget{Limit: 100, Window: time.Hour, From: MustPointer("/_meta/credits"), Source: "p.toml:2"}
	items := ArgLimit{Kind: MaxItems, At: MustPointer("/paths"), N: 10, Source: "p.toml:3"}
	length := ArgLimit{Kind: MaxLength, At: MustPointer("/q"), N: 200, Source: "p.toml:7"}
	r := &Rules{
		LabelResults: true, LabelResultsSource: "proxy.toml:1",
		Servers: map[string]*ServerRules{"mail": {LabelResults: &off, LabelResultsSource: "proxy.toml:9"}},
		FileRules: []Rule{
			{Name: "paid", Match: "web__*", Budget: budget, Args: []ArgLimit{items}, Source: "p.toml:1"},
			{Name: "short", Match: "*__search", Args: []ArgLimit{length}, Source: "p.toml:6"},
		},
	}
	d := r.Decide(Item{Kind: Tool, Server: "web", Original: "search", Exposed: "web__search"})
	want := Decision{Visible: true, Label: true, LabelSource: "proxy.toml:1", Limits: Limits{Budgets: []Budget{budget}, Args: []ArgLimit{items, length}}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Decide (-want +got):\n%s", diff)
	}
	const wantString = `exposed; budget 100 per 1h0m0s from /_meta/credits (p.toml:2); args.max_items "/paths" = 10 (p.toml:3); args.max_length "/q" = 200 (p.toml:7); results labelled as data (proxy.toml:1)`
	if got := d.String(); got != wantString {
		t.Errorf("String() = %q\nwant        %q", got, wantString)
	}
	if d := r.Decide(Item{Kind: Tool, Server: "mail", Original: "read", Exposed: "mail__read"}); d.Label {
		t.Errorf("mail's label_results = false lost to the top-level setting: %v", d)
	}
	if d := r.Decide(Item{Kind: Resource, Server: "web", Original: "https://x/", Exposed: "web+https://x/"}); !d.Label {
		t.Errorf("a resource of web is not labelled: %v", d)
	}
	ob := Budget{Limit: 5, Window: time.Minute, From: MustPointer("/_meta/cost"), Source: "proxy.toml:12"}
	r.Servers["web"] = &ServerRules{Overrides: map[string]Override{"search": {Budget: ob, Source: "proxy.toml:11"}}}
	if d := r.Decide(Item{Kind: Tool, Server: "web", Original: "search", Exposed: "web__search"}); !cmp.Equal([]Budget{ob, budget}, d.Limits.Budgets) {
		t.Errorf("budgets with an override = %v, want the override's and the rule's", d.Limits.Budgets)
	}
	if d := r.Decide(Item{Kind: Prompt, Server: "web", Original: "p", Exposed: "web__p"}); d.Label {
		t.Errorf("a prompt is labelled: %v", d)
	}
}
