// Package spawn starts the proxy's child processes (a stdio server with its
// pipes, the reaper) in process groups of their own, or hands over those
// that `manifold serve` started while it initialised (package
// internal/prestart), for upstream to take.
package spawn

import (
	"io"
	"os"
	"os/exec"

	"github.com/manifold-mcp/manifold/internal/spawn/prestart"
)

// Proc is a started server process and the proxy's ends of its pipes.
type Proc struct {
	Cmd *exec.Cmd
	// Stdin is written by the proxy; Stdout and Stderr are read.
	Stdin, Stdout, Stderr *os.File
}

// Server starts command with args, in dir (the proxy's own if empty), with
// the proxy's environment followed by env, in its own process group and
// (on Linux) killed by the kernel if the proxy dies. Its standard streams
// are pipes whose far ends the returned Proc holds. The error of a command
// that cannot be found wraps exec.ErrNotFound.
func Server(command string, args, env []string, dir string) (*Proc, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	SetProcAttr(cmd)
	pipes, err := prestart.NewPipes()
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.Child[0], pipes.Child[1], pipes.Child[2]
	err = cmd.Start()
	pipes.Started(err)
	if err != nil {
		return nil, err
	}
	return &Proc{Cmd: cmd, Stdin: pipes.Parent[0], Stdout: pipes.Parent[1], Stderr: pipes.Parent[2]}, nil
}

// ReaperArg is the first argument that makes the proxy's binary run as the
// reaper (package internal/reaper). It is that package's Arg, which this
// package does not import: the reaper's side wants nothing this package
// needs initialised.
const ReaperArg = prestart.ReaperArg

// Reaper starts the proxy's binary at path as the reaper, in a process group
// of its own (a terminal's Ctrl-C must not end it first) and at a lower
// priority, and returns it and the writer of its stdin.
func Reaper(path string) (*exec.Cmd, io.WriteCloser, error) {
	cmd, w, err := reaperCmd(path)
	if err != nil {
		return nil, nil, err
	}
	if err := startReaper(cmd, w); err != nil {
		return nil, nil, err
	}
	return cmd, w, nil
}

// reaperCmd returns the reaper's command, not started, and the write end w
// of the pipe that is its stdin: what is written to w before it starts
// waits in the pipe for it.
func reaperCmd(path string) (*exec.Cmd, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(path, ReaperArg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, nil, os.Stderr
	setGroup(cmd)
	return cmd, w, nil
}

// startReaper starts cmd, from reaperCmd, and closes the proxy's copy of
// its stdin's read end; if it cannot start, w too.
func startReaper(cmd *exec.Cmd, w *os.File) error {
	err := startBackground(cmd)
	cmd.Stdin.(*os.File).Close()
	if err != nil {
		w.Close()
	}
	return err
}
