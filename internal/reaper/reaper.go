// Package reaper is the reaper process: the proxy's binary re-executed with
// Arg as its first argument, which kills the process groups of the proxy's
// children once the proxy has gone, however it went (upstream.Reaper
// starts it and tells it the groups).
//
// It runs from this package's init, before main: Go initialises packages
// in the order of their import paths, each once its imports are, and this
// one imports a few low packages of the standard library only (not bufio,
// bytes or strings, which wait for unicode's tables). So the reaper skips
// the initialisation of all but 23 packages, and of every heavy one
// (protobuf, gRPC, OpenTelemetry, Prometheus, net/http, the go-sdk).
// Measured on the 2-core VM (2026-12-03): 2.0–3.0 ms of CPU per start
// instead of 7.5–9.8, and in a running proxy VmRSS 10.5 MB instead of 18.3
// (its own memory, RssAnon, 0.7–0.8 MB instead of 2.2–2.3; PSS 5.7 instead
// of 10.3). Giving back the pages of the binary its start mapped
// (internal/pagetrim) took it to 4.3–4.4 MB (PSS 2.3–2.4; 2026-12-06).
package reaper

import (
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/manifold-mcp/manifold/internal/pagetrim"
)

// Arg is the first argument that makes the proxy's binary run as the
// reaper instead of its normal self.
const Arg = "__manifold-reaper"

// Grace is how long the reaper waits between SIGTERM and SIGKILL.
const Grace = 2 * time.Second

func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		// Its only job is to outlast the proxy: the signals that end a
		// terminal's or a service manager's processes do not end it.
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		// It waits, mostly: the pages of the binary its start touched
		// are given back (the few it touches again come back).
		_, _ = pagetrim.Release()
		Run(os.Stdin, Grace)
		os.Exit(0)
	}
}

// Run is the reaper: it reads "+PGID" and "-PGID" lines from in until in
// ends, then signals every registered group: SIGTERM, and SIGKILL to those
// still there after grace.
func Run(in io.Reader, grace time.Duration) {
	groups := make(map[int]bool)
	eachLine(in, func(line []byte) {
		line = trim(line)
		if len(line) < 2 {
			return
		}
		pgid, err := strconv.Atoi(string(line[1:]))
		if err != nil || pgid <= 1 {
			return
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	})
	alive := func() []int {
		var out []int
		for g := range groups {
			if killGroup(g, 0) == nil {
				out = append(out, g)
			}
		}
		return out
	}
	left := alive()
	for _, g := range left {
		_ = killGroup(g, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		left = alive()
	}
	for _, g := range left {
		_ = killGroup(g, syscall.SIGKILL)
	}
}

// maxLine bounds a line of the reaper's input: a longer one (not one the
// proxy writes) is skipped.
const maxLine = 64

// eachLine calls f with every line of in, without its newline, until in
// ends or fails. (bufio and strings would make this package wait, in the
// order of initialisation, for unicode's tables and every package that
// sorts before it.)
func eachLine(in io.Reader, f func([]byte)) {
	var buf [512]byte
	var line []byte
	long := false
	for {
		n, err := in.Read(buf[:])
		for _, c := range buf[:n] {
			switch {
			case c == '\n':
				if !long {
					f(line)
				}
				line, long = line[:0], false
			case len(line) >= maxLine:
				long = true
			default:
				line = append(line, c)
			}
		}
		if err != nil {
			if len(line) > 0 && !long {
				f(line)
			}
			return
		}
	}
}

// trim returns b without its leading and trailing spaces, tabs and
// carriage returns.
func trim(b []byte) []byte {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }
	for len(b) > 0 && space(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && space(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
