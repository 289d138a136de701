package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/proxy"
)

// cmdStatus prints every server's state: of the running `manifold serve`
// instances of the config (found by their status files), of the instance at
// --url, or, when none runs (or with --fresh), of the config's servers started
// for the purpose.
func cmdStatus(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("status", "status [--config FILE | FILE | --url http://127.0.0.1:7777] [--fresh] [--json]", levelOneShot, stderr, &c)
	url := fs.String("url", "", "base URL of a running `manifold serve --http` instance (its /status endpoint is read)")
	asJSON := fs.Bool("json", false, "print JSON")
	fresh := fs.Bool("fresh", false, "start the config's servers to check them, even if a manifold serving it runs")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if err := configArg("status", &c, pos); err != nil {
		return err
	}
	if *url != "" && c.config != "" {
		return argError("status", "both a config file and --url; give one")
	}
	var running []instanceStatus
	if *url == "" {
		if abs, err := filepath.Abs(config.Path(c.config)); err == nil {
			running = runningInstances(abs)
		}
	}
	var sts []proxy.ServerStatus
	var clients *clientsStatus
	if *url != "" {
		var err error
		if sts, err = fetchStatus(ctx, *url); err != nil {
			return err
		}
		clients = fetchClients(ctx, *url)
	} else if !*fresh && len(running) > 0 {
		for _, inst := range running {
			if *asJSON {
				continue
			}
			fmt.Fprintf(stdout, "manifold pid %d (%s), serving %s since %s:\n", inst.PID, inst.Mode, inst.Config, inst.Started.Local().Format(time.DateTime))
			if inst.RestartNeeded != "" {
				fmt.Fprintf(stdout, "  restart needed: %s\n", inst.RestartNeeded)
			}
			printStatus(stdout, inst.Servers)
			printReviews(stdout, inst.Servers)
			printClients(stdout, inst.Clients, inst.Catalog)
			fmt.Fprintln(stdout)
			sts = append(sts, inst.Servers...)
		}
		if *asJSON {
			b, err := json.MarshalIndent(running, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, string(b))
		}
		return requiredDown(sts)
	} else {
		if !*fresh {
			fmt.Fprintf(stderr, "manifold: no running `manifold serve` for this config; starting its servers to check them\n")
		}
		c.oneShot = true
		p, err := startReady(ctx, c, stderr)
		if err != nil {
			return err
		}
		defer p.Close()
		sts = p.Status()
	}
	if *asJSON {
		var v any = sts
		if *url != "" {
			v = urlStatus{URL: *url, Servers: sts, Clients: clients}
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
	} else {
		printStatus(stdout, sts)
		printReviews(stdout, sts)
		if clients != nil {
			printClients(stdout, clients.Clients, &clients.Catalog)
		}
	}
	return requiredDown(sts)
}

// urlStatus is what `status --url --json` prints: the instance's servers
// (GET /status) and, when it serves them, its clients and catalog sizes (GET
// /status/clients; null from an older manifold).
type urlStatus struct {
	URL     string               `json:"url"`
	Servers []proxy.ServerStatus `json:"servers"`
	Clients *clientsStatus       `json:"clients"`
}

// clientsStatus is GET /status/clients.
type clientsStatus struct {
	Clients []proxy.ClientStatus `json:"clients"`
	Catalog proxy.CatalogSize    `json:"catalog"`
}

// fetchClients reads GET /status/clients; nil when the instance does not
// serve it (an older manifold) or cannot be read.
func fetchClients(ctx context.Context, base string) *clientsStatus {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/status/clients", nil)
	if err != nil {
		return nil
	}
	withToken(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var cs clientsStatus
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&cs) != nil {
		return nil
	}
	return &cs
}

// printClients prints the connected clients and the catalog's size per
// mode.
func printClients(w io.Writer, clients []proxy.ClientStatus, size *proxy.CatalogSize) {
	if size != nil {
		fmt.Fprintf(w, "\ncatalog: %d tools; full list %d bytes (~%d tokens), search list %d bytes (~%d tokens); tokens estimated as bytes/4\n",
			size.Tools, size.FullBytes, proxy.EstimateTokens(size.FullBytes), size.SearchBytes, proxy.EstimateTokens(size.SearchBytes))
	}
	if len(clients) == 0 {
		fmt.Fprintln(w, "no client has listed or called tools yet")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	identities := slices.ContainsFunc(clients, func(c proxy.ClientStatus) bool { return c.Identity != "" })
	head := "CLIENT\tVERSION\tPROTOCOL\tCATALOG\tTOOLS\tSESSION\tSINCE"
	if identities {
		head = "CLIENT\tIDENTITY\tVERSION\tPROTOCOL\tCATALOG\tTOOLS\tSESSION\tSINCE"
	}
	fmt.Fprintln(tw, head)
	for _, c := range clients {
		session := c.Session
		if session == "" {
			session = "-"
		}
		name := cut(c.Name, 40)
		if identities {
			name += "\t" + cut(cmp.Or(c.Identity, "-"), 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", name, cut(c.Version, 16), c.Protocol, c.Catalog, c.Tools, cut(session, 12), c.Since.Local().Format(time.DateTime))
	}
	_ = tw.Flush()
}

// requiredDown is an error (exit status 1) when a required server is not up.
func requiredDown(sts []proxy.ServerStatus) error {
	for _, st := range sts {
		if st.Required && st.State != "up" {
			return exitError{code: 1, msg: fmt.Sprintf("required server %q is %s", st.Name, st.State)}
		}
	}
	return nil
}

func fetchStatus(ctx context.Context, base string) ([]proxy.ServerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/status", nil)
	if err != nil {
		return nil, usageError("--url %q: %v", base, err)
	}
	withToken(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask %s for its status: %w (is `manifold serve --http` running there?)", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, fmt.Errorf("ask %s for its status: %s: the instance has [auth]; set %s to an API key or access token it accepts", base, resp.Status, tokenEnv)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ask %s for its status: %s", base, resp.Status)
	}
	var sts []proxy.ServerStatus
	if err := json.NewDecoder(resp.Body).Decode(&sts); err != nil {
		return nil, fmt.Errorf("ask %s for its status: %w", base, err)
	}
	return sts, nil
}

// tokenEnv names the environment variable whose value `status --url` sends
// as its bearer token, for an instance with [auth].
const tokenEnv = "MANIFOLD_TOKEN"

// withToken adds the bearer token of tokenEnv to req, if it is set.
func withToken(req *http.Request) {
	if tok := os.Getenv(tokenEnv); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
}

// protocolColumn says a server's protocol version, where its era came from,
// and what the probe cost: "2026-07-28 modern (probe 12ms)",
// "2025-11-25 legacy (cache; probe 2003ms)".
func protocolColumn(st proxy.ServerStatus) string {
	if st.Protocol == "" {
		return "-"
	}
	how := st.EraSource
	if st.ProbeMS != nil {
		if how == "probe" {
			how = fmt.Sprintf("probe %dms", *st.ProbeMS)
		} else {
			how += fmt.Sprintf("; probe %dms", *st.ProbeMS)
		}
	}
	if st.BothEras {
		how += "; speaks both eras"
	}
	return fmt.Sprintf("%s %s (%s)", st.Protocol, st.Era, how)
}

func printStatus(w io.Writer, sts []proxy.ServerStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tPID\tUPTIME\tRESTARTS\tTOOLS\tPROTOCOL\tHEALTH\tLAST ERROR")
	for _, st := range sts {
		pid, up, health := "-", "-", st.Health
		if st.PID != 0 {
			pid = fmt.Sprint(st.PID)
		}
		if st.Uptime > 0 {
			up = st.Uptime.Round(time.Second).String()
		}
		if health == "" {
			health = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", st.Name, st.State, pid, up, st.Restarts, st.Tools, protocolColumn(st), oneLine(health, 40), oneLine(st.Err, 60))
	}
	_ = tw.Flush()
}
