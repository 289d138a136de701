//go:build unix

package config

import (
	"os"
	"syscall"
)

// openSecretFile opens path for reading without blocking: opening a FIFO
// that no one writes to returns at once (and the caller refuses it, as it
// is not a regular file), and no terminal becomes the controlling one.
func openSecretFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}
