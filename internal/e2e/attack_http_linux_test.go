package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"
)

// dialAsUser connects to addr (an IPv4 loopback host:port) from a socket
// owned by uid: the kernel records the fsuid of the creating thread as a
// socket's owner, so the socket is created on a locked thread whose fsuid is
// uid for that one call. It needs CAP_SETUID and reports errNoSetfsuid
// without it.
func dialAsUser(addr string, uid int) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("dialAsUser: %q is not an IPv4 host:port", addr)
	}
	fd, err := socketAsUser(uid)
	if err != nil {
		return nil, err
	}
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	f := os.NewFile(uintptr(fd), "tcp as uid "+fmt.Sprint(uid))
	defer f.Close()
	return net.FileConn(f)
}

var errNoSetfsuid = fmt.Errorf("cannot set the fsuid (not root)")

func socketAsUser(uid int) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	// setfsuid returns the previous fsuid whether or not it changed it: ask
	// again to learn whether it did.
	cur, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	fd, err := -1, error(errNoSetfsuid)
	if int(cur) == uid {
		fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	}
	syscall.RawSyscall(syscall.SYS_SETFSUID, prev, 0, 0)
	if back, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, prev, 0, 0); back != prev {
		panic("dialAsUser: cannot restore the thread's fsuid")
	}
	return fd, err
}

// clientAsUser is an HTTP client whose connections are owned by uid, or
// errNoSetfsuid.
func clientAsUser(uid int) (*http.Client, error) {
	fd, err := socketAsUser(uid) // a probe: can this process do it?
	if err != nil {
		return nil, err
	}
	syscall.Close(fd)
	return &http.Client{
		Timeout: testTimeout,
		Transport: &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
			return dialAsUser(addr, uid)
		}, DisableCompression: true, IdleConnTimeout: 10 * time.Second},
	}, nil
}
