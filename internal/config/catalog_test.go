package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

func TestParseCatalog(t *testing.T) {
	good := []struct {
		name, doc string
		want      Catalog
	}{
		{"absent", "", Catalog{Mode: CatalogAuto, SearchAbove: DefaultSearchAbove}},
		{"keys", `[catalog]
mode = "search"
search_above = 12
always = ["files__read_text_file", "git__git_status"]
encoder = true

[catalog.clients]
"Visual Studio Code" = "search"
Claude-Code = "full"
"cursor*" = "auto"
`, Catalog{Mode: CatalogSearch, SearchAbove: 12, Encoder: true,
			Always:   []string{"files__read_text_file", "git__git_status"},
			AlwaysAt: "proxy.toml:4: catalog.always",
			Clients: []CatalogClient{
				{Name: "visual studio code", Mode: CatalogSearch},
				{Name: "claude-code", Mode: CatalogFull},
				{Name: "cursor*", Mode: CatalogAuto},
			}}},
		{"identities", `[catalog.identities]
"group:eng" = "full"
"user:alice@example.com" = "search"
`, Catalog{Mode: CatalogAuto, SearchAbove: DefaultSearchAbove, Identities: []CatalogIdentity{
			{Who: policy.Principal{Kind: "group", Name: "eng"}, Mode: CatalogFull},
			{Who: policy.Principal{Kind: "user", Name: "alice@example.com"}, Mode: CatalogSearch},
		}}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg.Catalog); diff != "" {
				t.Errorf("Catalog (-want +got):\n%s", diff)
			}
		})
	}

	bad := []struct {
		name, doc string
		want      []string
	}{
		{"mode", "[catalog]\nmode = \"lazy\"\n", []string{
			`proxy.toml:2:1: catalog.mode: "lazy" is not a catalog mode; use "auto" (search for clients that load every tool, when the catalog is large), "full" (every tool listed) or "search" (search tools only)`}},
		{"search_above", "[catalog]\nsearch_above = -1\n", []string{
			"proxy.toml:2:1: catalog.search_above: -1 is out of range; use a number of tools between 0 and 100000, like 40"}},
		{"always twice", "[catalog]\nalways = [\"a__b\", \"a__b\"]\n", []string{
			`proxy.toml:2:1: catalog.always: element 2: "a__b" is listed twice; remove one`}},
		{"client mode", "[catalog.clients]\nzed = \"all\"\n", []string{
			`proxy.toml:2:1: catalog.clients.zed: "all" is not a catalog mode; use "auto" (search for clients that load every tool, when the catalog is large), "full" (every tool listed) or "search" (search tools only)`}},
		{"client twice", "[catalog.clients]\nzed = \"full\"\nZed = \"search\"\n", []string{
			`proxy.toml:3:1: catalog.clients.Zed: the client "Zed" is already given a mode as "zed" (names are compared case-insensitively); remove one`}},
		{"encoder", "[catalog]\nencoder = \"yes\"\n", []string{
			`proxy.toml:2:1: catalog.encoder: expected true or false, found string; remove the quotes`}},
		{"unknown key", "[catalog]\nmodes = \"full\"\n", []string{
			`proxy.toml:2:1: catalog.modes: unknown key; did you mean "mode"?`}},
		{"identity prefix", "[catalog.identities]\n\"team:eng\" = \"full\"\n", []string{
			`proxy.toml:2:1: catalog.identities."team:eng": "team:eng": unknown prefix "team:"; write "user:SUBJECT", "group:NAME", "role:NAME", or "key:" followed by the API key's name`}},
		{"identity mode", "[catalog.identities]\n\"group:eng\" = \"all\"\n", []string{
			`proxy.toml:2:1: catalog.identities."group:eng": "all" is not a catalog mode; use "auto" (search for clients that load every tool, when the catalog is large), "full" (every tool listed) or "search" (search tools only)`}},
		{"identity twice", "[catalog.identities]\n\"group:eng\" = \"full\"\n\"role:eng\" = \"search\"\n", []string{
			`proxy.toml:3:1: catalog.identities."role:eng": group:eng is already given a mode (role: and group: are one); remove one`}},
		{"clients not a table", "[catalog]\nclients = \"full\"\n", []string{
			`proxy.toml:2:1: catalog.clients: expected a table of client names and modes such as { "Visual Studio Code" = "search" }, found string`}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
