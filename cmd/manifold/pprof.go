//go:build pprof

package main

import (
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

// With the pprof build tag (go build -tags pprof), MANIFOLD_CPUPROFILE=FILE
// writes a CPU profile of the whole run to FILE, from MANIFOLD_CPUPROFILE_AFTER (a duration) on, closed on SIGUSR2 or
// after MANIFOLD_CPUPROFILE_FOR (a duration): for
// profiling the hot path under a benchmark, never part of a release build.
func init() {
	path := os.Getenv("MANIFOLD_CPUPROFILE")
	if path == "" || (len(os.Args) > 1 && os.Args[1] == "__manifold-reaper") {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		return
	}
	if d, err := time.ParseDuration(os.Getenv("MANIFOLD_CPUPROFILE_AFTER")); err == nil {
		time.AfterFunc(d, func() { _ = pprof.StartCPUProfile(f) })
	} else if pprof.StartCPUProfile(f) != nil {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR2)
	var after <-chan time.Time
	if d, err := time.ParseDuration(os.Getenv("MANIFOLD_CPUPROFILE_FOR")); err == nil {
		after = time.After(d)
	}
	go func() {
		select {
		case <-c:
		case <-after:
		}
		pprof.StopCPUProfile()
		f.Close()
	}()
}
