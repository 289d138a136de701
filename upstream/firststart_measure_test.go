package upstream

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMeasureFirstStart prints the first-start time of the npm reference
// servers run by node, directly (a go-sdk client's initialize) and through
// Start with an empty era cache (probe, then initialize), alternated, five
// of each, with the medians. It asserts nothing and runs only when
// MANIFOLD_MEASURE_FIRST_START is set:
//
//	MANIFOLD_MEASURE_FIRST_START=1 go test -run TestMeasureFirstStart -v ./upstream/
func TestMeasureFirstStart(t *testing.T) {
	if os.Getenv("MANIFOLD_MEASURE_FIRST_START") == "" {
		t.Skip("a measurement; set MANIFOLD_MEASURE_FIRST_START=1")
	}
	for _, srv := range []struct {
		bin  string
		args []string
	}{
		{"mcp-server-everything", []string{"stdio"}},
		{"mcp-server-memory", nil},
		{"", nil}, // the fixture, ignoring server/discover (it answers the ping)
	} {
		env := []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}
		var bin string
		if srv.bin == "" {
			fx := fixtureOptions(t, "d-ignore")
			bin, env, srv.bin = fx.Command, append(env, fx.Env...), "fixture d-ignore"
		} else {
			var err error
			if bin, err = filepath.Abs(filepath.Join("..", "node_modules", ".bin", srv.bin)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(bin); err != nil {
				t.Skipf("%s is not installed (npm ci): %v", srv.bin, err)
			}
		}
		var direct, pinned, through, first []time.Duration
		var probe string
		var cost []time.Duration
		for range 5 {
			began := time.Now()
			u, err := Start(t.Context(), Options{Name: srv.bin, Command: bin, Args: srv.args, Env: env, Protocol: ProtocolLegacy})
			if err != nil {
				t.Fatalf("%s pinned legacy: %v", srv.bin, err)
			}
			pinned = append(pinned, time.Since(began))
			_ = u.Close()

			began = time.Now()
			cmd := exec.Command(bin, srv.args...)
			cmd.Env = append(os.Environ(), env...)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "measure"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			cancel()
			if err != nil {
				t.Fatalf("%s directly: %v", srv.bin, err)
			}
			direct = append(direct, time.Since(began))
			_ = cs.Close()

			began = time.Now()
			u, err = Start(t.Context(), Options{Name: srv.bin, Command: bin, Args: srv.args, Env: env, Eras: NewEraCache()})
			if err != nil {
				t.Fatalf("%s through Start: %v", srv.bin, err)
			}
			through = append(through, time.Since(began))
			probe = u.Era().Probe
			cost = append(cost, u.Era().ProbeCost)
			_ = u.Close()

			// For a client of the initialize era: initialize first.
			began = time.Now()
			u, err = Start(t.Context(), Options{Name: srv.bin, Command: bin, Args: srv.args, Env: env, Eras: NewEraCache(), PreferLegacy: true})
			if err != nil {
				t.Fatalf("%s through Start, PreferLegacy: %v", srv.bin, err)
			}
			first = append(first, time.Since(began))
			_ = u.Close()
		}
		med := func(d []time.Duration) time.Duration {
			s := slices.Clone(d)
			slices.Sort(s)
			return s[len(s)/2]
		}
		diff := make([]time.Duration, len(direct))
		firstDiff := make([]time.Duration, len(direct))
		for i := range direct {
			diff[i] = through[i] - pinned[i]
			firstDiff[i] = first[i] - pinned[i]
		}
		t.Logf("%s: go-sdk client directly, median %v %v; Start pinned legacy (no probe) %v %v; Start with an empty era cache (probe) %v %v; probe minus pinned, paired, median %v; probe %q, ProbeCost median %v",
			srv.bin, med(direct).Round(time.Millisecond), round(direct), med(pinned).Round(time.Millisecond), round(pinned),
			med(through).Round(time.Millisecond), round(through), med(diff).Round(time.Millisecond), probe, med(cost).Round(time.Microsecond))
		t.Logf("%s: Start with an empty era cache for a client of the initialize era (initialize first) %v %v; minus pinned, paired, median %v",
			srv.bin, med(first).Round(time.Millisecond), round(first), med(firstDiff).Round(time.Millisecond))
	}
}

func round(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, x := range d {
		out[i] = x.Round(time.Millisecond)
	}
	return out
}
