package main

import (
	"os"
	"syscall"
	"unsafe"
)

// fileIsTerminal reports whether f is a terminal: it has terminal
// attributes (/dev/null, a character device too, has none).
func fileIsTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
