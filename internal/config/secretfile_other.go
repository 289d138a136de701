//go:build !unix

package config

import (
	"fmt"
	"os"
)

// openSecretFile opens path for reading, after checking that it is a regular
// file (there are no FIFOs to block on where O_NONBLOCK does not exist).
func openSecretFile(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return os.Open(path)
}
