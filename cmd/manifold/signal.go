package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// forceAfter is how long after the first SIGINT a second one means "stop
// now" rather than a client's or a terminal's double signal.
const forceAfter = time.Second

// stopOnSignal returns a context cancelled by the first SIGINT or SIGTERM,
// and whether that happened. Cancelling starts the graceful stop: every
// server gets its grace. Later signals do not cut it short (Claude Code, for
// one, sends SIGINT and SIGTERM 100 ms apart), except a deliberate repeat:
// SIGINT again more than forceAfter after the first, or SIGQUIT. Those make
// the process exit at once, and its servers die with it.
func stopOnSignal(stderr io.Writer) (context.Context, func() bool) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM) // the first, and its repeats
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		first := <-sigs
		at := time.Now()
		signal.Notify(sigs, syscall.SIGQUIT) // now, "force": before, Go's goroutine dump
		for sig := range sigs {
			if sig == syscall.SIGQUIT || (sig == os.Interrupt && time.Since(at) > forceAfter) {
				fmt.Fprintf(stderr, "manifold: %v: stopping now, without waiting for the servers\n", sig)
				os.Exit(130)
			}
			fmt.Fprintf(stderr, "manifold: %v while stopping after %v: the servers keep their grace; press Ctrl-C again after a second, or send SIGQUIT, to stop at once\n", sig, first)
		}
	}()
	// Only a signal cancels ctx; it is never stopped, so that every later
	// signal is caught (above) rather than killing the process.
	return ctx, func() bool { return ctx.Err() != nil }
}
