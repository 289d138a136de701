//go:build !linux

package main

import "os"

// fileIsTerminal reports whether f is a terminal: here, a character
// device (/dev/null counts as one).
func fileIsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
