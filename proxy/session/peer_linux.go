package session

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"time"
)

// The kernel's socket diagnostics over netlink (linux/sock_diag.h,
// linux/inet_diag.h).
const (
	netlinkSockDiag   = 4  // NETLINK_SOCK_DIAG
	sockDiagByFamily  = 20 // SOCK_DIAG_BY_FAMILY
	inetDiagReqLen    = 56 // struct inet_diag_req_v2
	inetDiagMsgUIDOff = 64 // idiag_uid in struct inet_diag_msg
	nlmsgHdrLen       = 16
)

// diagUID asks the kernel (NETLINK_SOCK_DIAG, an exact lookup, as ss(8)
// does) for the uid owning the TCP socket whose local address is local and
// remote address is remote. Its cost does not depend on the number of
// sockets on the machine, where a scan of /proc/net/tcp reads all of them,
// TIME_WAIT ones included: each new connection of a client that does not
// keep its connections would cost a scan. errNotFound if the kernel has no
// such socket; another error if it cannot be asked (then /proc is read).
func diagUID(local, remote netip.AddrPort) (int, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	if local.Addr().Is4() != remote.Addr().Is4() {
		return 0, errNotFound
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	// The kernel answers while it handles the request; the timeout only
	// guards against one that does not.
	tv := syscall.NsecToTimeval(int64(time.Second))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return 0, err
	}
	// An IPv4 connection of an AF_INET6 socket (v4-mapped addresses) is
	// found in the IPv4 tables too: TCP has one table for both.
	family := byte(syscall.AF_INET6)
	if local.Addr().Is4() {
		family = syscall.AF_INET
	}
	return diagQuery(fd, family, local, remote)
}

// diagSeq is the sequence number of diagQuery's request, its socket's only.
const diagSeq = 1

// diagQuery sends one exact lookup of family on the netlink socket fd and
// reads its answer.
func diagQuery(fd int, family byte, local, remote netip.AddrPort) (int, error) {
	req := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], diagSeq)
	r := req[nlmsgHdrLen:]
	r[0] = family
	r[1] = syscall.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], ^uint32(0)) // every state
	id := r[8:]                                      // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	putAddr(id[4:20], local.Addr())
	putAddr(id[20:36], remote.Addr())
	binary.NativeEndian.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(id[44:], ^uint32(0))
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 512)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n >= nlmsgHdrLen && binary.NativeEndian.Uint32(buf[8:]) != diagSeq {
			continue // not this request's answer
		}
		return parseDiagAnswer(buf[:n])
	}
}

// putAddr writes a as the four 32-bit words of an inet_diag_sockid
// address, in network byte order (an IPv4 address in the first).
func putAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		b := a.As4()
		copy(dst, b[:])
		return
	}
	b := a.As16()
	copy(dst, b[:])
}

// parseDiagAnswer reads the kernel's answer to diagUID's request: one
// inet_diag_msg, or an error message (ENOENT: no such socket).
func parseDiagAnswer(b []byte) (int, error) {
	if len(b) < nlmsgHdrLen {
		return 0, errors.New("sock_diag: short answer")
	}
	n := int(binary.NativeEndian.Uint32(b[0:]))
	if n < nlmsgHdrLen || n > len(b) {
		return 0, errors.New("sock_diag: bad message length")
	}
	switch typ := binary.NativeEndian.Uint16(b[4:]); typ {
	case syscall.NLMSG_ERROR:
		if n < nlmsgHdrLen+4 {
			return 0, errors.New("sock_diag: short error")
		}
		switch errno := -int32(binary.NativeEndian.Uint32(b[nlmsgHdrLen:])); syscall.Errno(errno) {
		case syscall.ENOENT:
			return 0, errNotFound
		default:
			return 0, syscall.Errno(errno)
		}
	case sockDiagByFamily:
		if n < nlmsgHdrLen+inetDiagMsgUIDOff+4 {
			return 0, errors.New("sock_diag: short inet_diag_msg")
		}
		return int(binary.NativeEndian.Uint32(b[nlmsgHdrLen+inetDiagMsgUIDOff:])), nil
	default:
		return 0, errors.New("sock_diag: unexpected message type")
	}
}
