package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// soakDuration is how long TestSoak loads the proxy: $MANIFOLD_SOAK (a Go
// duration, for longer local runs), else 30s.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("MANIFOLD_SOAK")
	if s == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("MANIFOLD_SOAK=%q: want a positive duration such as 10m", s)
	}
	return d
}

// procStatus reads the Threads and VmRSS (in KiB) lines of /proc/PID/status.
func procStatus(t *testing.T, pid int) (threads, rssKiB int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read manifold's status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		case "VmRSS:":
			rssKiB, _ = strconv.Atoi(f[1])
		}
	}
	if threads == 0 || rssKiB == 0 {
		t.Fatalf("/proc/%d/status has no Threads or VmRSS:\n%s", pid, b)
	}
	return threads, rssKiB
}

// soakTally counts the answers of the soak's calls by kind.
type soakTally struct {
	mu    sync.Mutex
	kinds map[string]int // guarded by mu
	bad   []string       // guarded by mu; the first unexpected answers
}

func (st *soakTally) add(kind, bad string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.kinds[kind]++
	if bad != "" && len(st.bad) < 10 {
		st.bad = append(st.bad, bad)
	}
}

// TestSoak loads four servers from eight workers while one of them is
// killed with SIGKILL every ~3s. Every call must answer: the killed
// server's calls with an isError that says it is restarting or exited, the
// others' with their echo. Manifold's threads and memory stay flat.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	// Parallel: the soak lasts its duration whatever else runs, and the
	// other tests run beside it instead of after it. What it checks is
	// relative to its own baseline (threads, memory) or per call.
	t.Parallel()
	const (
		workers     = 8
		victim      = "s1"
		killEvery   = 3 * time.Second
		callTimeout = 10 * time.Second
		maxRounds   = 1_000_000 // per worker, with the duration as the real bound
	)
	servers := []string{"s1", "s2", "s3", "s4"}
	dur := soakDuration(t)
	sample := min(10*time.Second, dur/2) // when the baseline is taken

	// A failure window shorter than the kill period resets the backoff and
	// the failure count each time the victim has stayed up, so it is
	// restarted for the whole run, never marked failed.
	cfg := fmt.Sprintf("call_timeout = %q\nfirst_list_timeout = \"30s\"\n", callTimeout)
	for _, s := range servers {
		var extra []string
		if s == victim {
			extra = []string{"[servers.s1.restart]", `initial_backoff = "200ms"`, `failure_window = "1s"`}
		}
		cfg += fixture(s, []string{"-tools", "echo,pid"}, extra...)
	}
	sp := startStdio(t, writeConfig(t, cfg))
	ctx, cancel := context.WithTimeout(t.Context(), dur+2*testTimeout)
	defer cancel()
	tools := listTools(ctx, t, sp.cs)
	for _, s := range servers {
		if tools[s+"__echo"] == nil {
			t.Fatalf("%s__echo not listed: %v", s, toolNames(tools))
		}
	}

	tally := &soakTally{kinds: make(map[string]int)}
	end := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < maxRounds && time.Now().Before(end); round++ {
				for _, s := range servers {
					msg := fmt.Sprintf("w%d r%d", w, round)
					res, err := callBounded(ctx, sp.cs, s+"__echo", map[string]any{"message": msg}, callTimeout+callSlack)
					switch {
					case err != nil && strings.Contains(err.Error(), "no answer within"):
						tally.add("hang", err.Error())
					case err != nil:
						tally.add("protocol or transport error", err.Error())
					case !res.IsError && text(res) == s+": "+msg:
						tally.add("ok "+s, "")
					case s == victim && res.IsError && strings.Contains(text(res), `upstream "s1" is restarting`):
						tally.add("s1 restarting", "")
					case s == victim && res.IsError && strings.Contains(text(res), `upstream "s1" exited while running`):
						tally.add("s1 exited mid-call", "")
					default:
						tally.add("wrong answer", fmt.Sprintf("%s__echo(%q) = isError %v, %.300q", s, msg, res.IsError, text(res)))
					}
				}
			}
		}()
	}

	// The killer: every killEvery, the victim's current process, by the pid
	// it reports.
	kills, skipped := 0, 0
	var base struct{ threads, rss int }
	baseTaken := false
	start := time.Now()
	tick := time.NewTicker(killEvery)
	for time.Now().Before(end) {
		if !baseTaken && time.Since(start) >= sample {
			base.threads, base.rss = procStatus(t, sp.pid())
			baseTaken = true
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("soak cut short: %v", ctx.Err())
		}
		res, err := callBounded(ctx, sp.cs, victim+"__pid", nil, callTimeout+callSlack)
		if err != nil {
			t.Errorf("s1__pid: %v", err)
			continue
		}
		pid, perr := strconv.Atoi(text(res))
		if res.IsError || perr != nil {
			skipped++ // down right now: next time
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Errorf("kill -9 %d (s1): %v", pid, err)
			continue
		}
		kills++
	}
	tick.Stop()
	wg.Wait()
	threads, rss := procStatus(t, sp.pid())
	if !baseTaken { // a run shorter than one kill period
		base.threads, base.rss = threads, rss
	}

	tally.mu.Lock()
	defer tally.mu.Unlock()
	total := 0
	for _, n := range tally.kinds {
		total += n
	}
	t.Logf("soak %s: %d calls by %d workers, %d kills of s1 (%d skipped: s1 down); answers by kind: %v", dur, total, workers, kills, skipped, tally.kinds)
	t.Logf("manifold threads %d at %s, %d at the end; VmRSS %d KiB at %s, %d KiB at the end", base.threads, sample, threads, base.rss, sample, rss)

	for _, b := range tally.bad {
		t.Errorf("unexpected answer: %s", b)
	}
	for _, s := range servers[1:] {
		if tally.kinds["ok "+s] == 0 {
			t.Errorf("no successful call to %s", s)
		}
	}
	if tally.kinds["ok s1"] == 0 {
		t.Errorf("no successful call to s1: it never came back between kills")
	}
	if dur >= 2*killEvery && kills < 2 {
		t.Errorf("s1 was killed %d times in %s, want at least 2: the soak did not test restarts", kills, dur)
	}
	const threadSlack = 10
	if threads > base.threads+threadSlack {
		t.Errorf("manifold's threads grew from %d to %d (more than %d): something accumulates", base.threads, threads, threadSlack)
	}
	if rss > 2*base.rss || rss > base.rss+50<<10 {
		t.Errorf("manifold's VmRSS grew from %d KiB to %d KiB: more than 2x or +50 MiB", base.rss, rss)
	}
	// Every killed process was reaped: one process per server remains,
	// besides the reaper (which is not a server's: counted, it hid a
	// leftover whenever s1 happened to be down at the end, and failed the
	// soak whenever s1 was up).
	var left []procInfo
	for _, p := range waitGone(descendants(sp.pid()), 0) {
		if !strings.Contains(p.cmdline, "__manifold-reaper") { // upstream.ReaperArg
			left = append(left, p)
		}
	}
	if len(left) > len(servers) {
		t.Errorf("%d server processes under manifold after the soak, want at most %d (one per server):\n%s", len(left), len(servers), describe(descendants(sp.pid())))
	}
}
