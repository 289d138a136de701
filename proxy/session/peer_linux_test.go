package session

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"testing"
)

// loopbackPair connects a client to a listener of network at addr and
// returns the client's and the server's ends' addresses; the connection
// is closed at the test's end.
func loopbackPair(tb testing.TB, network, addr string) (client, server netip.AddrPort) {
	tb.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		tb.Skipf("no %s loopback here: %v", network, err)
	}
	tb.Cleanup(func() { ln.Close() })
	return loopbackPairOn(tb, ln)
}

// mappedPair connects an AF_INET6 socket to the v4-mapped loopback
// address of a dual-stack listener (Go would dial it with an AF_INET one),
// and returns both ends' addresses as the server sees them.
func mappedPair(tb testing.TB) (client, server netip.AddrPort) {
	tb.Helper()
	ln, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		tb.Skipf("no dual-stack listener here: %v", err)
	}
	tb.Cleanup(func() { ln.Close() })
	fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	sa := &syscall.SockaddrInet6{Port: ln.Addr().(*net.TCPAddr).Port}
	copy(sa.Addr[:], netip.MustParseAddr("::ffff:127.0.0.1").AsSlice())
	if err := syscall.Connect(fd, sa); err != nil {
		tb.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return netip.MustParseAddrPort(s.RemoteAddr().String()), netip.MustParseAddrPort(s.LocalAddr().String())
}

// TestDiagUID finds the owner of the client end of real loopback
// connections through the kernel's sock_diag, as /proc/net/tcp{,6} has it:
// over IPv4, over IPv6, and an AF_INET6 socket's connection to a v4-mapped
// address of a dual-stack listener (the server sees 127.0.0.1, and the
// client's socket is in /proc/net/tcp6). The ends are not interchangeable,
// and a connection that does not exist is not found.
func TestDiagUID(t *testing.T) {
	for _, tt := range []struct {
		name    string
		connect func(testing.TB) (client, server netip.AddrPort)
	}{
		{"tcp4", func(tb testing.TB) (netip.AddrPort, netip.AddrPort) {
			return loopbackPair(tb, "tcp4", "127.0.0.1:0")
		}},
		{"tcp6", func(tb testing.TB) (netip.AddrPort, netip.AddrPort) { return loopbackPair(tb, "tcp6", "[::1]:0") }},
		{"v4-mapped", mappedPair},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, server := tt.connect(t)
			uid, err := diagUID(client, server)
			if err != nil || uid != os.Getuid() {
				t.Errorf("diagUID(client end %v) = %d, %v; want %d", client, uid, err, os.Getuid())
			}
			var fromProc []int
			for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
				if data, err := os.ReadFile(f); err == nil {
					if uid, ok := socketUID(data, client, server); ok {
						fromProc = append(fromProc, uid)
					}
				}
			}
			if len(fromProc) != 1 || fromProc[0] != uid {
				t.Errorf("/proc/net/tcp{,6} has the client end as %v; sock_diag %d", fromProc, uid)
			}
			if _, err := diagUID(server, client); err != nil {
				t.Errorf("diagUID(server end) = %v; want its own socket found", err)
			}
			if uid, err := diagUID(client, netip.AddrPortFrom(server.Addr(), server.Port()+1)); !errors.Is(err, errNotFound) {
				t.Errorf("diagUID of a connection that does not exist = %d, %v; want errNotFound", uid, err)
			}
		})
	}
}

// TestDiagUIDOtherUser: the uid is the socket's owner's, not the asker's.
// Run as root, the client's socket is made by a thread whose filesystem
// uid is nobody's (65534): the kernel gives a socket the fsuid of the
// thread that creates it.
func TestDiagUIDOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make a socket owned by another user")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const nobody = 65534
	type made struct {
		fd  int
		err error
	}
	ch := make(chan made, 1)
	go func() { // a goroutine of its own, so that the test's thread keeps its fsuid
		runtime.LockOSThread() // the thread ends with the goroutine: its fsuid is not restored
		if _, _, errno := syscall.RawSyscall(syscall.SYS_SETFSUID, nobody, 0, 0); errno != 0 {
			ch <- made{-1, errno}
			return
		}
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			ch <- made{-1, err}
			return
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			syscall.Close(fd)
			ch <- made{-1, err}
			return
		}
		ch <- made{fd, nil}
	}()
	m := <-ch
	if m.err != nil {
		t.Fatal(m.err)
	}
	fd := m.fd
	defer syscall.Close(fd)
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client := netip.MustParseAddrPort(s.RemoteAddr().String())
	server := netip.MustParseAddrPort(s.LocalAddr().String())
	if uid, err := diagUID(client, server); err != nil || uid != nobody {
		t.Errorf("diagUID(the other user's client end) = %d, %v; want %d", uid, err, nobody)
	}
	if uid, err := diagUID(server, client); err != nil || uid != 0 {
		t.Errorf("diagUID(our server end) = %d, %v; want 0", uid, err)
	}
}

// TestParseDiagAnswer: what the kernel could send back that is not an
// inet_diag_msg is an error, never a uid.
func TestParseDiagAnswer(t *testing.T) {
	msg := func(typ uint16, length int, payload []byte) []byte {
		b := make([]byte, nlmsgHdrLen+len(payload))
		binary.NativeEndian.PutUint32(b[0:], uint32(length))
		binary.NativeEndian.PutUint16(b[4:], typ)
		copy(b[nlmsgHdrLen:], payload)
		return b
	}
	errno := func(e syscall.Errno) []byte {
		b := make([]byte, 4)
		binary.NativeEndian.PutUint32(b, uint32(-int32(e)))
		return b
	}
	diag := make([]byte, 72)
	binary.NativeEndian.PutUint32(diag[inetDiagMsgUIDOff:], 1234)
	for _, tt := range []struct {
		name    string
		in      []byte
		uid     int
		wantErr error // nil: any error
		ok      bool
	}{
		{"inet_diag_msg", msg(sockDiagByFamily, nlmsgHdrLen+72, diag), 1234, nil, true},
		{"ENOENT", msg(syscall.NLMSG_ERROR, nlmsgHdrLen+4, errno(syscall.ENOENT)), 0, errNotFound, false},
		{"EPERM", msg(syscall.NLMSG_ERROR, nlmsgHdrLen+4, errno(syscall.EPERM)), 0, syscall.EPERM, false},
		{"short", []byte{1, 2, 3}, 0, nil, false},
		{"length past the data", msg(sockDiagByFamily, 500, diag), 0, nil, false},
		{"length below the header", msg(sockDiagByFamily, 4, diag), 0, nil, false},
		{"cut inet_diag_msg", msg(sockDiagByFamily, nlmsgHdrLen+40, diag[:40]), 0, nil, false},
		{"cut error", msg(syscall.NLMSG_ERROR, nlmsgHdrLen, nil), 0, nil, false},
		{"another type", msg(syscall.NLMSG_DONE, nlmsgHdrLen+72, diag), 0, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			uid, err := parseDiagAnswer(tt.in)
			switch {
			case tt.ok && (err != nil || uid != tt.uid):
				t.Errorf("= %d, %v; want %d", uid, err, tt.uid)
			case !tt.ok && err == nil:
				t.Errorf("= %d, nil; want an error", uid)
			case !tt.ok && tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("= %v; want %v", err, tt.wantErr)
			}
		})
	}
}

// BenchmarkPeerUID is the owner lookup of a new loopback connection with
// 2,000 other sockets open on the machine: the exact lookup of sock_diag
// against the scan of /proc/net/tcp{,6} that it replaces.
func BenchmarkPeerUID(b *testing.B) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	for range 1000 {
		loopbackPairOn(b, ln)
	}
	client, server := loopbackPairOn(b, ln)
	b.Run("sock_diag", func(b *testing.B) {
		for b.Loop() {
			if _, err := diagUID(client, server); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proc", func(b *testing.B) {
		for b.Loop() {
			found := false
			for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
				data, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				if _, ok := socketUID(data, client, server); ok {
					found = true
					break
				}
			}
			if !found {
				b.Fatal("not found in /proc")
			}
		}
	})
}

// loopbackPairOn connects one client to ln and returns both ends'
// addresses; both stay open until the test or benchmark ends.
func loopbackPairOn(tb testing.TB, ln net.Listener) (client, server netip.AddrPort) {
	tb.Helper()
	c, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return netip.MustParseAddrPort(c.LocalAddr().String()), netip.MustParseAddrPort(s.LocalAddr().String())
}
