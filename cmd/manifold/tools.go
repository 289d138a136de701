package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// toolsWidth is the width `manifold tools` fits its table in.
const toolsWidth = 100

func cmdTools(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("tools", "tools [--config FILE | FILE] [--json] [--client NAME [--entry NAME] | --tokens]", levelOneShot, stderr, &c)
	asJSON := fs.Bool("json", false, "print the catalog and the servers' states as JSON, with every verdict in full")
	clientName := fs.String("client", "", "instead of the catalog, flag every exposed tool name that this client would refuse or mangle, and every cap on tools the catalog passes: "+strings.Join(naming.ClientKeys(), ", "))
	entry := fs.String("entry", "manifold", "with --client: the name of Manifold's entry in that client (manifold connect --name)")
	tokens := fs.Bool("tokens", false, "instead of the catalog, print what the tool list costs a client up front, per server, in full and in search mode: bytes of JSON and estimated tokens (bytes/4)")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if err := configArg("tools", &c, pos); err != nil {
		return err
	}
	client, err := clientFlags(fs, *clientName, *entry)
	if err != nil {
		return err
	}
	c.oneShot, c.interactive = true, true
	p, cfg, err := startProxy(ctx, c, levelOneShot, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := awaitReady(ctx, p, stderr); err != nil {
		return err
	}
	if *tokens {
		size := p.CatalogSize()
		if *asJSON {
			b, err := json.MarshalIndent(size, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, string(b))
			return err
		}
		printSize(stdout, size)
		return nil
	}
	entries, red := p.Catalog(), p.Redactor()
	for i := range entries { // an upstream may echo a secret it was given in a description
		entries[i].Description = red.String(entries[i].Description)
	}
	if client != nil {
		return printClientCheck(stdout, *client, *entry, entries, cfg.MaxNameLength, *asJSON)
	}
	if *asJSON {
		return printCatalogJSON(stdout, entries, p.Status())
	}
	printCatalog(stdout, entries, p.Status(), toolsWidth)
	return nil
}

// catalogJSON is the output of `manifold tools --json`.
type catalogJSON struct {
	Catalog []entryJSON  `json:"catalog"`
	Servers []serverJSON `json:"servers"`
}

type entryJSON struct {
	Kind        string `json:"kind"` // tool, prompt, resource or template
	Exposed     string `json:"exposed"`
	Server      string `json:"server"`
	Original    string `json:"original"`
	Visible     bool   `json:"visible"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	Verdict     string `json:"verdict"`
	Description string `json:"description,omitempty"`
}

type serverJSON struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

func printCatalogJSON(w io.Writer, entries []proxy.Entry, sts []proxy.ServerStatus) error {
	out := catalogJSON{Catalog: []entryJSON{}, Servers: []serverJSON{}}
	for _, e := range entries {
		out.Catalog = append(out.Catalog, entryJSON{Kind: e.Kind, Exposed: e.Exposed, Server: e.Server, Original: e.Original,
			Visible: e.Visible, ReadOnly: e.ReadOnly, Verdict: e.Verdict, Description: e.Description})
	}
	for _, st := range sts {
		out.Servers = append(out.Servers, serverJSON{Name: st.Name, State: st.State, Error: st.Err})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// printCatalog prints the catalog as a table that fits width columns
// (EXPOSED KIND SERVER VERDICT DESCRIPTION): an exposed name is never cut (it
// is what one types), so a long one takes a line of its own; the other
// columns are cut with "…" where they must be, and the description takes
// the room left, led by the server's own name where the exposed name does
// not end in it (sanitized, shortened or renamed). --json has it all in
// full. Below come the counts, and the servers that are not up, with why.
func printCatalog(w io.Writer, entries []proxy.Entry, sts []proxy.ServerStatus, width int) {
	type row struct{ exposed, kind, server, verdict, desc string }
	rows := []row{{"EXPOSED", "KIND", "SERVER", "VERDICT", "DESCRIPTION"}}
	counts := map[string]int{}
	hidden, held := 0, 0
	for _, e := range entries {
		verdict := "exposed"
		switch {
		case e.Held:
			verdict = "held"
			held++
		case !e.Visible:
			verdict = "hidden"
			hidden++
		case e.ReadOnly:
			verdict = "read-only"
		}
		counts[e.Kind]++
		desc := oneLine(e.Description, 400)
		if e.Exposed != e.Original && !strings.HasSuffix(e.Exposed, "__"+e.Original) && !strings.HasSuffix(e.Exposed, "+"+e.Original) {
			desc = strings.TrimSpace("(" + e.Original + ") " + desc)
		}
		rows = append(rows, row{e.Exposed, e.Kind, e.Server, verdict, desc})
	}
	const gap = 2
	widest := func(cap int, f func(row) string) int {
		n := 0
		for _, r := range rows {
			n = max(n, utf8.RuneCountInString(f(r)))
		}
		return min(n, cap)
	}
	wExp := widest(36, func(r row) string { return r.exposed })
	wKind := widest(8, func(r row) string { return r.kind })
	wServer := widest(14, func(r row) string { return r.server })
	wVerdict := widest(9, func(r row) string { return r.verdict })
	wDesc := width - (wExp + wKind + wServer + wVerdict + 4*gap)
	for _, r := range rows {
		var b strings.Builder
		if utf8.RuneCountInString(r.exposed) > wExp {
			fmt.Fprintln(w, r.exposed)
			b.WriteString(strings.Repeat(" ", wExp))
		} else {
			b.WriteString(pad(r.exposed, wExp))
		}
		for _, col := range []struct {
			s string
			w int
		}{{r.kind, wKind}, {r.server, wServer}, {r.verdict, wVerdict}} {
			b.WriteString(strings.Repeat(" ", gap))
			b.WriteString(pad(cut(col.s, col.w), col.w))
		}
		if wDesc >= 8 && r.desc != "" {
			b.WriteString(strings.Repeat(" ", gap))
			b.WriteString(cut(r.desc, wDesc))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	var parts []string
	for _, k := range []string{"tool", "prompt", "resource", "template"} {
		parts = append(parts, count(counts[k], k))
	}
	fmt.Fprintf(w, "\n%s", strings.Join(parts, ", "))
	if hidden > 0 {
		fmt.Fprintf(w, "; %d hidden by policy (manifold explain NAME says why)", hidden)
	}
	fmt.Fprintln(w)
	if held > 0 {
		fmt.Fprintf(w, "%d held: changed since approved, awaiting review (manifold approve lists them)\n", held)
	}
	for _, st := range sts {
		if st.State != "up" {
			fmt.Fprintf(w, "\nserver %q is %s: %s\n", st.Name, st.State, st.Err)
		}
	}
}

// pad fills s with spaces to w runes.
func pad(s string, w int) string {
	if n := utf8.RuneCountInString(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// cut shortens s to w runes, ending in "…" when it had to.
func cut(s string, w int) string {
	r := []rune(s)
	if len(r) <= w {
		return s
	}
	if w <= 1 {
		return string(r[:w])
	}
	return string(r[:w-1]) + "…"
}

// awaitReady waits for every server's first start attempt. While it waits on
// a terminal it shows, on stderr only and on one line that it clears, which
// servers are still starting, once a start takes more than a second.
func awaitReady(ctx context.Context, p *proxy.Server, stderr io.Writer) error {
	var tick <-chan time.Time
	if isTerminal(stderr) {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	shown := false
	for {
		select {
		case <-p.Ready():
			if shown {
				fmt.Fprint(stderr, "\r\033[K")
			}
			return nil
		case <-ctx.Done():
			if shown {
				fmt.Fprint(stderr, "\r\033[K")
			}
			return ctx.Err()
		case <-tick:
			waited := time.Since(start)
			if waited < time.Second {
				continue
			}
			if line := pendingLine(p.Status(), waited); line != "" {
				fmt.Fprint(stderr, "\r\033[K"+line)
				shown = true
			}
		}
	}
}

// pendingLine says which servers are still starting, in at most 99 columns.
func pendingLine(sts []proxy.ServerStatus, waited time.Duration) string {
	var names []string
	for _, st := range sts {
		if st.State == "starting" {
			names = append(names, st.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return cut(fmt.Sprintf("manifold: waiting for %s to start (%ds)", strings.Join(names, ", "), int(waited.Seconds())), toolsWidth-1)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return fileIsTerminal(f)
}

// readerIsTerminal reports whether r is a terminal.
func readerIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && fileIsTerminal(f)
}

// printSize prints what the tool list costs a client up front, per server
// and in total, in full mode and in search mode.
func printSize(w io.Writer, size proxy.CatalogSize) {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOLS\tFULL BYTES\tFULL TOKENS\tSEARCH BYTES\tSEARCH TOKENS\t")
	row := func(name string, tools, full, search int) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", name, tools, full, proxy.EstimateTokens(full), search, proxy.EstimateTokens(search))
	}
	for _, s := range size.Servers {
		row(s.Server, s.Tools, s.FullBytes, s.SearchBytes)
	}
	fmt.Fprintf(tw, "%s\t\t\t\t%d\t%d\t\n", "(search tools)", size.MetaBytes, proxy.EstimateTokens(size.MetaBytes))
	row("total", size.Tools, size.FullBytes, size.SearchBytes)
	_ = tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	pct := 0.0
	if size.FullBytes > 0 {
		pct = 100 * float64(size.SearchBytes) / float64(size.FullBytes)
	}
	fmt.Fprintf(w, "\nBytes are those of the tools/list result's JSON; tokens are estimated as bytes/4 (the real count depends on the model's tokenizer).\n"+
		"The search list is %.1f %% of the full list. Per-server rows are the servers' shares: in search mode, their tools listed by catalog.always.\n", pct)
}
