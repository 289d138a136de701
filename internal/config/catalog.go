package config

import (
	"fmt"
	"strings"

	"github.com/manifold-mcp/manifold/policy"
)

// Catalog modes (catalog.mode and the values of [catalog.clients]).
const (
	CatalogAuto   = "auto"
	CatalogFull   = "full"
	CatalogSearch = "search"
)

// DefaultSearchAbove is catalog.search_above's default: auto serves the
// search surface to an eager client only when more tools than this are
// visible (model accuracy at picking a tool falls past 30 to 50 tools).
const DefaultSearchAbove = 40

// Catalog is the [catalog] table: which tool list each client gets.
type Catalog struct {
	// Mode is CatalogAuto, CatalogFull or CatalogSearch; CatalogAuto when
	// absent.
	Mode string
	// SearchAbove is search_above: auto serves search only to a client
	// whose visible catalog has more tools than this.
	SearchAbove int
	// Always are exposed tool names listed directly beside the search
	// tools, in the file's order, without duplicates. AlwaysAt is where
	// the key is ("proxy.toml:12: catalog.always"), so that a name no
	// server lists can be warned about, once the servers are up.
	Always   []string
	AlwaysAt string
	// Clients map a client's clientInfo name (case-insensitive; a glob of
	// package policy) to a mode, in the file's order; the first match
	// wins.
	Clients []CatalogClient
	// Identities map an HTTP identity ("group:eng", "user:alice@…",
	// "key:ci-bot"; see policy.ParsePrincipal) to a mode, in the file's
	// order; the first that the caller is wins, over Clients.
	Identities []CatalogIdentity
	// Encoder is encoder: the search surface also ranks with the sentence
	// encoder, whose embeddings of the tools are built in the background
	// and cached on disk (off by default: it costs CPU minutes the first
	// time, and memory).
	Encoder bool
}

// CatalogIdentity is one entry of [catalog.identities].
type CatalogIdentity struct {
	Who  policy.Principal
	Mode string
}

// CatalogClient is one entry of [catalog.clients].
type CatalogClient struct {
	// Name is the key, lowercased: a clientInfo name or a glob.
	Name string
	// Mode is CatalogAuto, CatalogFull or CatalogSearch.
	Mode string
}

// catalogModeFix says which values catalog.mode takes.
const catalogModeFix = `use "auto" (search for clients that load every tool, when the catalog is large), "full" (every tool listed) or "search" (search tools only)`

// catalog decodes the [catalog] table.
func (d *decoder) catalog(root *table) Catalog {
	c := Catalog{Mode: CatalogAuto, SearchAbove: DefaultSearchAbove}
	t, ok := root.table("catalog")
	if !ok {
		return c
	}
	if m, ok := t.str("mode"); ok {
		if validCatalogMode(m) {
			c.Mode = m
		} else {
			t.errorf("mode", "%q is not a catalog mode; %s", m, catalogModeFix)
		}
	}
	if n, ok := t.integer("search_above"); ok {
		if n < 0 || n > 100000 {
			t.errorf("search_above", "%d is out of range; use a number of tools between 0 and 100000, like %d", n, DefaultSearchAbove)
		} else {
			c.SearchAbove = int(n)
		}
	}
	if b, ok := t.boolean("encoder"); ok {
		c.Encoder = b
	}
	if names, ok := t.strs("always"); ok {
		seen := map[string]bool{}
		for i, n := range names {
			switch {
			case n == "":
				t.errorf("always", "element %d is empty; write an exposed tool name such as \"files__read_text_file\" (manifold tools lists them)", i+1)
			case seen[n]:
				t.errorf("always", "element %d: %q is listed twice; remove one", i+1, n)
			default:
				seen[n] = true
				c.Always = append(c.Always, n)
			}
		}
		if p, ok := t.fields["always"]; ok {
			c.AlwaysAt = d.file + ": catalog.always"
			if line, _ := d.where(p); line > 0 {
				c.AlwaysAt = fmt.Sprintf("%s:%d: catalog.always", d.file, line)
			}
		}
	}
	if ct, ok := t.tableOf("clients", `a table of client names and modes such as { "Visual Studio Code" = "search" }`); ok {
		seen := map[string]string{}
		for _, name := range d.inDocumentOrder(ct) {
			m, ok := ct.str(name)
			if !ok {
				continue
			}
			key := strings.ToLower(name)
			switch {
			case !validCatalogMode(m):
				ct.errorf(name, "%q is not a catalog mode; %s", m, catalogModeFix)
			case policy.CheckGlob(key) != nil:
				ct.errorf(name, "%v; write the client's clientInfo name (manifold status shows it), or a glob such as \"cursor*\"", policy.CheckGlob(key))
			case seen[key] != "":
				ct.errorf(name, "the client %q is already given a mode as %q (names are compared case-insensitively); remove one", name, seen[key])
			default:
				seen[key] = name
				c.Clients = append(c.Clients, CatalogClient{Name: key, Mode: m})
			}
		}
		ct.finish()
	}
	if it, ok := t.tableOf("identities", `a table of identities and modes such as { "group:eng" = "full" }`); ok {
		seen := map[policy.Principal]bool{}
		for _, name := range d.inDocumentOrder(it) {
			m, ok := it.str(name)
			if !ok {
				continue
			}
			p, err := policy.ParsePrincipal(name)
			switch {
			case err != nil:
				it.errorf(name, "%v", err)
			case !validCatalogMode(m):
				it.errorf(name, "%q is not a catalog mode; %s", m, catalogModeFix)
			case seen[p]:
				it.errorf(name, "%s is already given a mode (role: and group: are one); remove one", p)
			default:
				seen[p] = true
				c.Identities = append(c.Identities, CatalogIdentity{Who: p, Mode: m})
			}
		}
		it.finish()
	}
	t.finish()
	return c
}

func validCatalogMode(m string) bool {
	return m == CatalogAuto || m == CatalogFull || m == CatalogSearch
}
