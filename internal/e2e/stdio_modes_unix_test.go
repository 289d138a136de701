//go:build unix

package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nonblocking reports whether f's open file description has O_NONBLOCK,
// without changing it (f.Fd would).
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		var errno syscall.Errno
		var r uintptr
		r, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags = int(r)
		if errno != 0 {
			ferr = errno
		}
	}); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// callEcho lists alpha's tools through cs and calls alpha__echo.
func callEcho(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("alpha__echo: %+v, %v", res, err)
	}
}

// TestStdioDescriptorModes: manifold serve reads stdin in the mode it was
// given (blocking: it never changes the client's open file description),
// writes stdout through the poller while it serves, and gives stdout back
// in blocking mode when it exits.
func TestStdioDescriptorModes(t *testing.T) {
	t.Parallel()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	defer outR.Close()
	cs, stop := serveOn(t, inR, outW, outR, inW)
	callEcho(t, cs)
	if nonblocking(t, inR) {
		t.Error("stdin's description is non-blocking while manifold serves; manifold must leave it as the client gave it")
	}
	if !nonblocking(t, outW) {
		t.Error("stdout's description is blocking while manifold serves; want it through the poller")
	}
	stop()
	if nonblocking(t, outW) {
		t.Error("stdout's description is still non-blocking after manifold exited; want it restored")
	}
	if nonblocking(t, inR) {
		t.Error("stdin's description is non-blocking after manifold exited")
	}
}

// TestStdioOneSocket: a client that gives manifold one socket as both stdin
// and stdout (one open file description, one blocking mode) is served, and
// manifold exits 0 when the client shuts its side.
func TestStdioOneSocket(t *testing.T) {
	t.Parallel()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "client"), os.NewFile(uintptr(fds[1]), "manifold")
	defer ours.Close()
	cs, stop := serveOn(t, theirs, theirs, shutReader{ours}, shutWriter{ours})
	theirs.Close() // manifold has its own
	callEcho(t, cs)
	stop()
}

// serveOn starts `manifold serve` with the given stdin and stdout, connects
// a go-sdk client through r and w, and returns the session and a func
// that closes it and checks manifold exits 0 within exitBound.
func serveOn(t *testing.T, stdin, stdout *os.File, r io.ReadCloser, w io.WriteCloser) (*mcp.ClientSession, func()) {
	t.Helper()
	cfg := writeConfig(t, fixture("alpha", nil))
	cmd := command(manifoldBin, "serve", "--config", cfg)
	cmd.Stdin, cmd.Stdout = stdin, stdout // exec sets their descriptions blocking
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("manifold stderr:\n%s", stderr)
		}
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).Connect(t.Context(),
		&mcp.IOTransport{Reader: r, Writer: w}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	return cs, func() {
		t.Helper()
		_ = cs.Close() // manifold's stdin ends
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("manifold: %v", err)
			}
		case <-time.After(exitBound):
			_ = cmd.Process.Kill()
			t.Fatalf("manifold did not exit within %s of its stdin's end", exitBound)
		}
	}
}

// shutWriter writes to a socket and, on Close, shuts its writing side only
// (the reading side still gets the peer's last answers).
type shutWriter struct{ f *os.File }

func (w shutWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w shutWriter) Close() error { return shutWrite(w.f) }

// shutReader reads from a socket and, on Close, shuts its writing side
// before it closes the file. The go-sdk's IOTransport closes its reader
// first, then its writer; the file's descriptor is not closed while its
// reading goroutine is blocked in read(2) (the socket is blocking, not in
// the poller), and shutWriter's shutdown on a closing file is refused: so
// the peer would see no end of its input until it wrote again, and a
// manifold with nothing more to say waited for it (the test failed after
// exitBound, in 3 runs of 16 here).
type shutReader struct{ f *os.File }

func (r shutReader) Read(p []byte) (int, error) { return r.f.Read(p) }

func (r shutReader) Close() error {
	return errors.Join(shutWrite(r.f), r.f.Close())
}

// shutWrite shuts the writing side of the socket f.
func shutWrite(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_WR) }); err != nil {
		return err
	}
	return serr
}
