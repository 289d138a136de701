package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// grandchildRE finds the pid the spawn-mode fixture prints on stderr.
var grandchildRE = regexp.MustCompile(`grandchild pid (\d+)`)

func TestNoProcessLeftBehind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// end makes manifold exit; the harness then waits for it.
		end func(sp *stdioProxy)
	}{
		{name: "client closes stdin", end: func(sp *stdioProxy) {
			_ = sp.cs.Close()
		}},
		{name: "SIGTERM", end: func(sp *stdioProxy) {
			_ = syscall.Kill(sp.pid(), syscall.SIGTERM)
			_ = sp.cs.Wait() // manifold's stdout ends when it exits
			_ = sp.cs.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The full list: the test looks for each server's tools in it.
			cfg := "[catalog]\nmode = \"full\"\n" + fixture("alpha", nil) +
				fixture("spawner", []string{"-mode", "spawn"}) +
				fixture("stubborn", []string{"-mode", "ignore-term"})
			wantServers := []string{"alpha", "spawner", "stubborn"}
			mem, haveNode := optionalNodeBin("mcp-server-memory")
			if haveNode {
				cfg += fmt.Sprintf("\n[servers.memory]\ncommand = %s\nenv = { MEMORY_FILE_PATH = %s }\n",
					tomlStr(mem), tomlStr(filepath.Join(t.TempDir(), "memory.jsonl")))
				wantServers = append(wantServers, "memory")
			} else {
				t.Log("mcp-server-memory is not installed; checking the Go fixtures only")
			}
			sp := startStdio(t, writeConfig(t, cfg))
			ctx := testCtx(t)
			tools := listTools(ctx, t, sp.cs)
			for _, server := range wantServers {
				found := false
				for n := range tools {
					found = found || strings.HasPrefix(n, server+"__")
				}
				if !found {
					t.Fatalf("no tool of %s listed: %v", server, toolNames(tools))
				}
			}

			tree := descendants(sp.pid())
			var fixtures, nodes int
			for _, p := range tree {
				switch {
				case strings.HasPrefix(p.cmdline, fixtureBin):
					fixtures++
				case strings.Contains(p.cmdline, "mcp-server-memory"):
					nodes++
				}
			}
			if fixtures != 3 {
				t.Errorf("%d fixture processes under manifold, want 3:\n%s", fixtures, describe(tree))
			}
			if haveNode && nodes != 1 {
				t.Errorf("%d server-memory processes under manifold, want 1:\n%s", nodes, describe(tree))
			}
			m := grandchildRE.FindStringSubmatch(sp.stderr.String())
			if m == nil {
				t.Fatalf("the spawn fixture's grandchild pid is not in manifold's stderr")
			}
			grandchild, _ := strconv.Atoi(m[1])
			inTree := false
			for _, p := range tree {
				inTree = inTree || p.pid == grandchild
			}
			if !inTree {
				t.Fatalf("grandchild pid %d is not under manifold:\n%s", grandchild, describe(tree))
			}

			// stop fails the test unless manifold exits 0 within exitBound
			// and every process of tree is gone within goneBound.
			sp.proc.stop(func() { tt.end(sp) })
		})
	}
}
