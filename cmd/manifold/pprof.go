//go:build pprof

// This file is compiled only with -tags pprof: a build for looking at the
// proxy's own memory and CPU, never the released one. With
// MANIFOLD_PPROF_DIR set (else it does nothing), every SIGUSR1 runs a GC and writes heap-N.pprof (the live heap, for
// `go tool pprof -sample_index=inuse_space`) and memstats-N.txt (the
// runtime's account of its memory: heap, stacks, metadata) to that folder,
// and SIGUSR2 starts a CPU profile (cpu-N.pprof) or stops the one running;
// with MANIFOLD_PPROF_START=1 too, the first CPU profile starts at once
// (a profile of the start-up, until the first SIGUSR2).
//
//	go build -tags pprof -o /tmp/manifold ./cmd/manifold
//	MANIFOLD_PPROF_DIR=/tmp/prof /tmp/manifold serve ... & kill -USR1 $!
//
// For every allocation in the heap profile (init's too), add
// GODEBUG=memprofilerate=1. The reaper process never gets here (it runs
// and exits in package internal/reaper's init).

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"
)

func init() {
	dir := os.Getenv("MANIFOLD_PPROF_DIR")
	if dir == "" {
		return
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	cpu := make(chan os.Signal, 1)
	signal.Notify(cpu, syscall.SIGUSR2)
	if os.Getenv("MANIFOLD_PPROF_START") == "1" {
		cpu <- syscall.SIGUSR2
	}
	go func() {
		for n := 0; ; n++ {
			<-cpu
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", n)))
			if err != nil {
				continue
			}
			if pprof.StartCPUProfile(f) == nil {
				<-cpu
				pprof.StopCPUProfile()
			}
			_ = f.Close()
		}
	}()
	go func() {
		for n := 0; ; n++ {
			<-sigs
			runtime.GC()
			if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", n))); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s := fmt.Sprintf("HeapAlloc %d\nHeapInuse %d\nHeapIdle %d\nHeapReleased %d\nHeapSys %d\nStackInuse %d\nStackSys %d\nMSpanSys %d\nMCacheSys %d\nBuckHashSys %d\nGCSys %d\nOtherSys %d\nSys %d\nNumGC %d\nGoroutines %d\n",
				ms.HeapAlloc, ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.HeapSys, ms.StackInuse, ms.StackSys, ms.MSpanSys, ms.MCacheSys, ms.BuckHashSys, ms.GCSys, ms.OtherSys, ms.Sys, ms.NumGC, runtime.NumGoroutine())
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("memstats-%d.txt", n)), []byte(s), 0o644)
		}
	}()
}
