package spawn

import (
	"io"
	"os"
	"os/exec"

	"github.com/manifold-mcp/manifold/internal/spawn/prestart"
)

// The servers and the reaper that `manifold serve` started while it
// initialised (package internal/spawn/prestart) are handed over here, as the
// exec.Cmd that Server and Reaper would have returned.

// Take returns the server started early with exactly these spawn
// arguments, if there is one and it has not been taken, and forgets it:
// the caller owns it (and its registration with the reaper). Its program
// must be the one os/exec finds for command now (prestart looks it up as
// os/exec does, without os/exec); one that is not is stopped, and Take
// returns nil. It waits for the early start to finish, if one runs.
func Take(command string, args, env []string, dir string) *Proc {
	var cmd *exec.Cmd
	p := prestart.Take(prestart.Spec{Command: command, Args: args, Env: env, Dir: dir}, func(path string) bool {
		cmd = exec.Command(command, args...)
		return cmd.Err == nil && cmd.Path == path
	})
	if p == nil {
		return nil
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	SetProcAttr(cmd)
	return &Proc{Cmd: adopt(cmd, p.Process), Stdin: p.Stdin, Stdout: p.Stdout, Stderr: p.Stderr}
}

// TakeReaper returns the reaper started early, if it runs the binary at
// path, and its stdin's writer; the caller owns them. It returns nil if
// there is none, or it was taken.
func TakeReaper(path string) (*exec.Cmd, io.WriteCloser) {
	p, w := prestart.TakeReaper(path)
	if p == nil {
		return nil, nil
	}
	cmd := exec.Command(path, ReaperArg)
	setGroup(cmd)
	return adopt(cmd, p.Process), w
}

// Discard stops every server started early that was not taken, and the
// reaper if none was: see prestart.Discard.
func Discard() { prestart.Discard() }

// adopt makes cmd, not started, the command of proc, as Start would have
// left it. Its Wait then waits for proc and sets ProcessState: it needs
// nothing else from Start where the standard streams are files (no
// copying goroutines) and no context was given.
func adopt(cmd *exec.Cmd, proc *os.Process) *exec.Cmd {
	cmd.Process = proc
	return cmd
}
