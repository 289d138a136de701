package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// clientFlags checks --client and --entry of `manifold tools` before any
// server starts; it returns nil without --client.
func clientFlags(fs *flag.FlagSet, name, entry string) (*naming.Client, error) {
	entrySet := false
	fs.Visit(func(f *flag.Flag) { entrySet = entrySet || f.Name == "entry" })
	if name == "" {
		if entrySet {
			return nil, usageError("tools: --entry goes with --client NAME (one of %s)", strings.Join(naming.ClientKeys(), ", "))
		}
		return nil, nil
	}
	c, ok := naming.LookupClient(name)
	if !ok {
		return nil, usageError("tools: --client %q is not a client Manifold knows; use one of %s", name, strings.Join(naming.ClientKeys(), ", "))
	}
	if entry == "" {
		return nil, usageError("tools: --entry is empty; give the name of Manifold's entry in %s (manifold connect writes %q unless told --name)", c.Title, "manifold")
	}
	return &c, nil
}

// clientCheckJSON is the output of `manifold tools --client NAME --json`.
type clientCheckJSON struct {
	Client        string             `json:"client"`
	Title         string             `json:"title"`
	Entry         string             `json:"entry"`
	Tools         int                `json:"tools"`
	Budget        int                `json:"budget"`
	MaxNameLength int                `json:"max_name_length"`
	Problems      []clientProblemOut `json:"problems"`
}

type clientProblemOut struct {
	Name    string `json:"name,omitempty"`
	As      string `json:"as,omitempty"`
	Other   string `json:"other,omitempty"`
	Problem string `json:"problem"`
}

// printClientCheck prints what the client would do to the visible tools of
// entries behind the entry named entry; an error (exit status 1) when it
// flags anything, so that a script can check a catalog against a client.
func printClientCheck(w io.Writer, c naming.Client, entry string, entries []proxy.Entry, maxName int, asJSON bool) error {
	var names []string
	for _, e := range entries {
		if e.Kind == "tool" && e.Visible {
			names = append(names, e.Exposed)
		}
	}
	problems := c.Check(entry, names)
	budget := c.Budget(entry)
	if asJSON {
		out := clientCheckJSON{Client: c.Key, Title: c.Title, Entry: entry, Tools: len(names), Budget: budget,
			MaxNameLength: maxName, Problems: []clientProblemOut{}}
		for _, p := range problems {
			out.Problems = append(out.Problems, clientProblemOut{Name: p.Name, As: p.As, Other: p.Other, Problem: p.What})
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w, string(b)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "%s, entry %q: %s exposed; names of up to %d characters fit (max_name_length = %d).\n",
			c.Title, entry, count(len(names), "tool"), budget, maxName)
		for _, p := range problems {
			switch {
			case p.Name == "":
				fmt.Fprintf(w, "\n  catalog: %s\n", p.What)
			case p.As != "" && p.As != p.Name && p.Other == "":
				fmt.Fprintf(w, "\n  %s\n    as %s\n    %s\n", p.Name, p.As, p.What)
			default:
				fmt.Fprintf(w, "\n  %s\n    %s\n", p.Name, p.What)
			}
		}
		if len(problems) == 0 {
			fmt.Fprintf(w, "No problem: %s takes every name as it is.\n", c.Title)
		}
	}
	if maxName > budget && budget >= config.MinMaxNameLength {
		if !asJSON {
			fmt.Fprintf(w, "\nmax_name_length = %d lets names grow past the %d that fit %s behind %q: set max_name_length = %d in proxy.toml (shortened names change once).\n",
				maxName, budget, c.Title, entry, budget)
		}
	}
	if len(problems) > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("tools: %s for %s behind the entry %q", count(len(problems), "problem"), c.Title, entry)}
	}
	return nil
}
