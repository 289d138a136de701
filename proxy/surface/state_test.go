package surface

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// state is a surface of n tools of server "s", made with o.
func state(t *testing.T, o Options, n int) *State {
	t.Helper()
	g := naming.Group{Server: "s", Prefix: "s"}
	for i := range n {
		g.Names = append(g.Names, fmt.Sprintf("t%d", i))
	}
	tools, err := naming.Build([]naming.Group{g})
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]*mcp.Tool{}
	for _, e := range tools.Entries() {
		defs[e.Exposed] = &mcp.Tool{Name: e.Exposed, InputSchema: map[string]any{"type": "object"}}
	}
	return New(o, defs, tools, nil, nil)
}

func TestModeFor(t *testing.T) {
	eng, err := policy.ParsePrincipal("group:eng")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		o      Options
		tools  int
		client string
		who    policy.Identity
		want   string
		varies bool
	}{
		{name: "default full", tools: 100, client: "cursor", want: ModeFull},
		{name: "auto small", o: Options{Mode: ModeAuto}, tools: 10, client: "cursor", want: ModeFull},
		{name: "auto large", o: Options{Mode: ModeAuto}, tools: 100, client: "cursor", want: ModeSearch, varies: true},
		{name: "auto large, deferring client", o: Options{Mode: ModeAuto}, tools: 100, client: "claude-code", want: ModeFull, varies: true},
		{name: "by client", o: Options{Clients: []ClientMode{{Name: "Cur*", Mode: ModeSearch}}}, tools: 1, client: "cursor", want: ModeSearch, varies: true},
		{name: "by identity over client", o: Options{Clients: []ClientMode{{Name: "cursor", Mode: ModeSearch}},
			Identities: []IdentityMode{{Who: eng, Mode: ModeFull}}}, tools: 1, client: "cursor", who: policy.Identity{User: "a", Groups: []string{"eng"}}, want: ModeFull, varies: true},
		{name: "search everywhere", o: Options{Mode: ModeSearch}, tools: 1, client: "claude-code", want: ModeSearch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := state(t, tt.o, tt.tools)
			if got := c.ModeForWho(tt.client, tt.who); got != tt.want {
				t.Errorf("ModeForWho(%q) = %q, want %q", tt.client, got, tt.want)
			}
			if got := c.ListVaries(); got != tt.varies {
				t.Errorf("ListVaries() = %v, want %v", got, tt.varies)
			}
		})
	}
}

func TestSurfaceAndMetaDefs(t *testing.T) {
	c := state(t, Options{Always: []string{"s__t1", "search_tools", "nope"}}, 3)
	sf := c.Surface()
	var names []string
	for _, d := range sf.List {
		names = append(names, d.Name)
	}
	want := append(append([]string{}, MetaTools...), "s__t1")
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("surface list (-want +got):\n%s", diff)
	}
	if c.Surface() != sf {
		t.Error("the surface is built twice")
	}
	a, b := c.MetaDefs(3, []string{"s"}), c.MetaDefs(3, []string{"s"})
	if a[ToolSearch] == nil || a[ToolSearch] != b[ToolSearch] {
		t.Error("two callers that see the same get two meta-tool definitions")
	}
	if c.MetaDefs(1, []string{"s"})[ToolSearch] == a[ToolSearch] {
		t.Error("callers that see different counts share one definition")
	}
}

func TestSchemaParams(t *testing.T) {
	got := SchemaParams(map[string]any{"type": "object", "required": []any{"b"}, "properties": map[string]any{
		"a": map[string]any{"description": "first"}, "b": map[string]any{}, "c": map[string]any{}}})
	want := []Param{{Name: "b", Required: true}, {Name: "a", Description: "first"}, {Name: "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SchemaParams (-want +got):\n%s", diff)
	}
}
