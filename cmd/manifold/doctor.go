package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/manifold-mcp/manifold/internal/clientconf"
	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/proxy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// doctorReport is what manifold doctor finds; --json prints it as is.
type doctorReport struct {
	Config    doctorConfig     `json:"config"`
	Clients   []doctorClient   `json:"clients"`
	Instances []doctorInstance `json:"instances"`
	// Problems are every finding that needs the user, each with its fix.
	Problems []string `json:"problems"`
}

type doctorConfig struct {
	Path    string   `json:"path"`
	Loads   bool     `json:"loads"`
	Servers []string `json:"servers,omitempty"`
	// Problems are manifold check's, one a line.
	Problems []string `json:"problems,omitempty"`
}

type doctorClient struct {
	Client string `json:"client"`
	Scope  string `json:"scope"`
	Path   string `json:"path"`
	Error  string `json:"error,omitempty"`
	// Manifold is whether an entry of the file runs manifold; Entry is its
	// name and ConfigPath the config it serves.
	Manifold   bool   `json:"manifold"`
	Entry      string `json:"entry,omitempty"`
	ConfigPath string `json:"config_path,omitempty"`
	// Duplicates are the file's other entries whose server proxy.toml also
	// has: the client runs them twice.
	Duplicates []string `json:"duplicates,omitempty"`
	// Others are the file's other entries.
	Others []string `json:"others,omitempty"`
}

type doctorInstance struct {
	PID     int            `json:"pid"`
	Mode    string         `json:"mode"`
	Tools   int            `json:"tools"`
	Servers []doctorServer `json:"servers"`
	// Clients are the clients connected to it now (or, for 2026-07-28
	// clients, seen in the last minutes).
	Clients []doctorSession `json:"clients"`
}

// doctorSession is one client connected to a running instance: who it is,
// what it negotiated, what it was offered against its limits.
type doctorSession struct {
	Name         string   `json:"name"`
	Version      string   `json:"version,omitempty"`
	Protocol     string   `json:"protocol,omitempty"`
	Capabilities []string `json:"capabilities"`
	Catalog      string   `json:"catalog"`
	Tools        int      `json:"tools"`
	// Client is the known client it is (manifold tools --client), if any;
	// Limit its cap on tools, if it has one.
	Client string `json:"client,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	// Mangled are the names it refuses or changes, and the caps passed
	// (what manifold tools --client says), for the list it gets.
	Mangled []string `json:"mangled,omitempty"`
}

type doctorServer struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Tools int    `json:"tools"`
	Error string `json:"error,omitempty"`
	Fix   string `json:"fix,omitempty"`
}

// toolLimits are the clients' known limits on the tools they take.
var toolLimits = map[clientconf.Client]int{clientconf.Cursor: 40, clientconf.Windsurf: 100, clientconf.VSCode: 128}

// guiPath is the PATH a GUI client (Claude Desktop, on macOS) starts
// manifold with.
const guiPath = "/usr/bin:/bin:/usr/sbin:/sbin"

func cmdDoctor(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("doctor", "doctor [--config FILE] [--json]", levelOneShot, stderr, &c)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if err := configArg("doctor", &c, pos); err != nil {
		return err
	}
	env, err := clientconf.OSEnv()
	if err != nil {
		return err
	}
	rep := diagnose(config.Path(c.config), env)
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, redact.Shapes(string(b)))
	} else {
		printDoctor(redact.New().Writer(stdout), rep)
	}
	if len(rep.Problems) > 0 {
		return exitError{code: 1}
	}
	return nil
}

// diagnose looks at the config at path and at every client file.
func diagnose(path string, env clientconf.Env) doctorReport {
	var rep doctorReport
	abs, _ := filepath.Abs(path)
	rep.Config.Path = abs
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }

	raw, _, _ := readBounded(abs)
	cfg, err := config.Check(abs, exec.LookPath)
	switch {
	case errors.Is(err, config.ErrNoConfig):
		problem("%s does not exist: create it with manifold import --write or manifold init", abs)
	case err != nil:
		for _, l := range strings.Split(err.Error(), "\n") {
			rep.Config.Problems = append(rep.Config.Problems, l)
			problem("%s", l)
		}
	default:
		rep.Config.Loads = true
		if _, err := readLock(cfg.LockFile); err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				rep.Config.Problems = append(rep.Config.Problems, l)
				problem("%s", l)
			}
		}
		for _, l := range cfg.LeftOut {
			problem("server %s is left out, the others serve: %s; %s", l.Name, l.Err, startFix(l.Err))
		}
		for _, s := range cfg.Servers {
			rep.Config.Servers = append(rep.Config.Servers, s.Name)
			if s.Command == "" || strings.ContainsAny(s.Command, `/\`) {
				continue
			}
			if p, err := exec.LookPath(s.Command); err == nil && !inPath(s.Command, guiPath) {
				problem("server %s: %s is found in your PATH (%s) but not in the PATH GUI clients give manifold (%s): write command = %q in %s", s.Name, s.Command, p, guiPath, p, abs)
			}
		}
	}
	vars := configVars(string(raw))

	for _, c := range clientconf.Clients {
		for _, loc := range clientconf.Locations(c, env) {
			data, found, err := readBounded(loc.Path)
			if !found && err == nil {
				continue
			}
			dc := doctorClient{Client: string(c), Scope: string(loc.Scope), Path: loc.Path}
			if err != nil {
				dc.Error = err.Error()
				rep.Clients = append(rep.Clients, dc)
				continue
			}
			im := clientconf.NewImporter(env)
			if err := im.Add(loc, data); err != nil {
				dc.Error = err.Error()
				problem("%s: %v: %s cannot read it either; fix it", loc.Path, err, c.Title())
				rep.Clients = append(rep.Clients, dc)
				continue
			}
			entries := im.Entries()
			for _, e := range entries {
				dc.Others = append(dc.Others, e.Original)
			}
			if raw != nil {
				dc.Duplicates, _ = clientconf.InConfig(raw, entries)
			}
			for _, m := range im.Manifold() {
				dc.Manifold, dc.Entry, dc.ConfigPath = true, m.Original, configArgOf(m.Args)
				checkEntry(c, loc, m, abs, vars, problem)
			}
			if dc.Manifold && len(dc.Duplicates) > 0 {
				problem("%s (%s): %s also runs %s, which Manifold serves: the tools are there twice; remove them (manifold connect --replace %s)",
					c.Title(), loc.Path, dc.Entry, strings.Join(dc.Duplicates, ", "), c)
			}
			rep.Clients = append(rep.Clients, dc)
		}
	}

	for _, inst := range runningInstances(abs) {
		di := doctorInstance{PID: inst.PID, Mode: inst.Mode}
		for _, s := range inst.Servers {
			ds := doctorServer{Name: s.Name, State: s.State, Tools: s.Tools, Error: s.Err, Fix: startFix(s.Err)}
			di.Tools += s.Tools
			if s.State == "failed" || s.State == "exited" {
				fix := ds.Fix
				if fix == "" {
					fix = "see its stderr in the log of manifold serve"
				}
				problem("server %s of the running manifold (pid %d) is %s: %s; %s", s.Name, inst.PID, s.State, firstLine(s.Err), fix)
			}
			di.Servers = append(di.Servers, ds)
		}
		for _, r := range pendingOf(inst.Servers) {
			state := "hidden until approved"
			if !r.Held {
				state = "served, flagged"
			}
			why := ""
			if len(r.Findings) > 0 {
				why = " (" + strings.Join(r.Findings, "; ") + ")"
			}
			problem("server %s of the running manifold (pid %d): %s %q is %s since it was approved%s, %s: review the diff and accept it with %s",
				r.Server, inst.PID, r.Kind, r.Name, r.Change, why, state, r.Approve(r.Server))
		}
		for _, dc := range rep.Clients {
			if limit, ok := toolLimits[clientconf.Client(dc.Client)]; ok && dc.Manifold && di.Tools > limit {
				problem("the running manifold (pid %d) offers %d tools; %s takes about %d: narrow them with tools.allow or tools.deny, or give it the search surface ([catalog] mode)", inst.PID, di.Tools, clientconf.Client(dc.Client).Title(), limit)
			}
		}
		for _, cs := range inst.Clients {
			di.Clients = append(di.Clients, diagnoseSession(inst, cs, rep.Clients, problem))
		}
		rep.Instances = append(rep.Instances, di)
	}
	if !slices.ContainsFunc(rep.Clients, func(dc doctorClient) bool { return dc.Manifold }) {
		problem("no client has Manifold as an entry: run manifold connect CLIENT")
	}
	return rep
}

// diagnoseSession describes the client cs connected to inst, and reports
// the names it would mangle and the caps its list passes, behind the entry
// name its configuration gives Manifold (else "manifold").
func diagnoseSession(inst instanceStatus, cs proxy.ClientStatus, clients []doctorClient, problem func(string, ...any)) doctorSession {
	ds := doctorSession{Name: cs.Name, Version: cs.Version, Protocol: cs.Protocol, Capabilities: cs.Capabilities,
		Catalog: cs.Catalog, Tools: cs.Tools}
	if ds.Capabilities == nil {
		ds.Capabilities = []string{}
	}
	nc, ok := naming.ClientByInfo(cs.Name)
	if !ok || inst.Names == nil {
		return ds
	}
	ds.Client = nc.Key
	if limit, ok := toolLimits[clientconf.Client(nc.Key)]; ok {
		ds.Limit = limit
	}
	entry := "manifold"
	for _, dc := range clients {
		if dc.Manifold && dc.Entry != "" && dc.Client == nc.Key {
			entry = dc.Entry
			break
		}
	}
	names := inst.Names.Full
	if cs.Catalog == proxy.ModeSearch {
		names = inst.Names.Search
	}
	for _, p := range nc.Check(entry, names) {
		text := p.Name + ": " + p.What
		if p.Name == "" {
			text = "catalog: " + p.What
		}
		ds.Mangled = append(ds.Mangled, text)
	}
	if len(ds.Mangled) > 0 {
		problem("%s connected to the running manifold (pid %d) gets %d tools, and %s: %s; see manifold tools --client %s --entry %s",
			nc.Title, inst.PID, ds.Tools, count(len(ds.Mangled), "problem"), ds.Mangled[0], nc.Key, entry)
	}
	return ds
}

// checkEntry reports what is wrong with client c's Manifold entry m.
func checkEntry(c clientconf.Client, loc clientconf.Location, m clientconf.Entry, cfgPath string, vars []string, problem func(string, ...any)) {
	where := fmt.Sprintf("%s (%s)", c.Title(), loc.Path)
	cmd := strings.ReplaceAll(m.Command, "$$", "$")
	if !filepath.IsAbs(cmd) {
		problem("%s: the entry %s runs %q, not an absolute path: GUI clients have no PATH; run manifold connect %s", where, m.Original, cmd, c)
	} else if st, err := os.Stat(cmd); err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		problem("%s: the entry %s runs %s, which is not an executable file; run manifold connect %s", where, m.Original, cmd, c)
	}
	switch p := configArgOf(m.Args); {
	case p == "":
		problem("%s: the entry %s gives no --config: manifold looks in the folder the client chooses; run manifold connect %s", where, m.Original, c)
	case p != cfgPath:
		problem("%s: the entry %s serves %s, not %s; run manifold connect %s (or doctor --config %s)", where, m.Original, p, cfgPath, c, p)
	}
	// Variables that this client would not pass to manifold.
	for _, v := range vars {
		if _, set := m.Env[v]; set {
			continue
		}
		switch {
		case c == clientconf.Codex:
			problem("%s: proxy.toml uses ${%s}, but Codex passes only a few variables to its servers: add env_vars = [%q] to [mcp_servers.%s]", where, v, v, m.Original)
		case c == clientconf.Gemini && geminiRedacts(v):
			problem("%s: proxy.toml uses ${%s}, which Gemini CLI hides from its servers: add \"env\": {%q: \"$%s\"} to the entry %s", where, v, v, v, m.Original)
		}
	}
}

// geminiRedacts reports whether Gemini CLI withholds the variable v from
// the servers it starts.
func geminiRedacts(v string) bool {
	u := strings.ToUpper(v)
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "KEY", "AUTH", "CREDENTIAL"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// configVars are the variables a proxy.toml needs set: ${VAR} without a
// default.
func configVars(src string) []string {
	var out []string
	for _, m := range varRE.FindAllStringSubmatch(src, -1) {
		if m[2] == "" && !slices.Contains(out, m[1]) && m[1] != "HOME" {
			out = append(out, m[1])
		}
	}
	return out
}

// configArgOf is the value of --config in args, "" when absent.
func configArgOf(args []string) string {
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return strings.ReplaceAll(args[i+1], "$$", "$")
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return strings.ReplaceAll(v, "$$", "$")
		}
	}
	return ""
}

// inPath reports whether name is an executable file in a folder of path.
func inPath(name, path string) bool {
	for _, d := range filepath.SplitList(path) {
		if st, err := os.Stat(filepath.Join(d, name)); err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

// startFix is the fix for a server that failed to start with message msg,
// when the message says what went wrong.
func startFix(msg string) string {
	switch {
	case msg == "":
		return ""
	case strings.Contains(msg, "ENOTEMPTY") || strings.Contains(msg, "_npx") && strings.Contains(msg, "npm"):
		return "npx's cache looks corrupt: remove ~/.npm/_npx and start again"
	case strings.Contains(msg, "executable file not found"):
		return "the program is not found with the PATH the client gives manifold: write its full path in command (see: command -v PROGRAM)"
	case strings.Contains(msg, "fork/exec") && strings.Contains(msg, "no such file or directory"):
		return "the program does not exist at that path: fix command, or install the server"
	case strings.Contains(msg, "env: ") && strings.Contains(msg, "No such file"), strings.Contains(msg, "node: not found"), strings.Contains(msg, "npx: not found"):
		return "node is not in the PATH the client gives manifold: write npx's full path in command"
	case strings.Contains(msg, "is not set"), strings.Contains(msg, "unset variable"):
		return "set the variable where the client starts manifold (the env of its manifold entry)"
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func printDoctor(w io.Writer, rep doctorReport) {
	fmt.Fprintf(w, "Config %s: ", rep.Config.Path)
	switch {
	case rep.Config.Loads:
		fmt.Fprintf(w, "ok, %s (%s)\n", count(len(rep.Config.Servers), "server"), strings.Join(rep.Config.Servers, ", "))
	case len(rep.Config.Problems) > 0:
		fmt.Fprintf(w, "%s\n", count(len(rep.Config.Problems), "problem"))
		for _, p := range rep.Config.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	default:
		fmt.Fprintln(w, "not found")
	}
	fmt.Fprintln(w, "\nClients:")
	if len(rep.Clients) == 0 {
		fmt.Fprintln(w, "  no client configuration found")
	}
	for _, dc := range rep.Clients {
		title := clientconf.Client(dc.Client).Title()
		fmt.Fprintf(w, "  %s (%s scope) %s\n", title, dc.Scope, dc.Path)
		switch {
		case dc.Error != "":
			fmt.Fprintf(w, "    cannot read: %s\n", dc.Error)
		case dc.Manifold:
			fmt.Fprintf(w, "    Manifold is the entry %q, serving %s\n", dc.Entry, dc.ConfigPath)
		default:
			fmt.Fprintln(w, "    Manifold is not an entry (manifold connect "+dc.Client+")")
		}
		if len(dc.Others) > 0 {
			fmt.Fprintf(w, "    other entries: %s\n", strings.Join(dc.Others, ", "))
		}
		if len(dc.Duplicates) > 0 {
			fmt.Fprintf(w, "    also in proxy.toml: %s\n", strings.Join(dc.Duplicates, ", "))
		}
	}
	if len(rep.Instances) > 0 {
		fmt.Fprintln(w, "\nRunning:")
	}
	for _, in := range rep.Instances {
		fmt.Fprintf(w, "  manifold pid %d (%s), %d tools\n", in.PID, in.Mode, in.Tools)
		for _, s := range in.Servers {
			fmt.Fprintf(w, "    %-16s %-8s %3d tools", s.Name, s.State, s.Tools)
			if s.Error != "" {
				fmt.Fprintf(w, "  %s", firstLine(s.Error))
			}
			fmt.Fprintln(w)
		}
		if len(in.Clients) == 0 {
			fmt.Fprintln(w, "    no client connected")
		}
		for _, c := range in.Clients {
			caps := "no capabilities"
			if len(c.Capabilities) > 0 {
				caps = strings.Join(c.Capabilities, ", ")
			}
			fmt.Fprintf(w, "    client %s %s, protocol %s, %s; %s list, %s", c.Name, c.Version, c.Protocol, caps, c.Catalog, count(c.Tools, "tool"))
			if c.Limit > 0 {
				fmt.Fprintf(w, " (it takes about %d)", c.Limit)
			}
			fmt.Fprintln(w)
			for _, m := range c.Mangled {
				fmt.Fprintf(w, "      %s\n", m)
			}
		}
	}
	if len(rep.Problems) == 0 {
		fmt.Fprintln(w, "\nNo problems found.")
		return
	}
	fmt.Fprintf(w, "\n%s:\n", count(len(rep.Problems), "problem"))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}
