package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// MaxSecretFileBytes bounds the file that a ${file:PATH} reads: a secret is a
// token, a password or a key, not a document, and a path that names a huge
// or endless file must not make the loader read it.
const MaxSecretFileBytes = 64 << 10

// SecretFile is a file that a ${file:PATH} of the config read.
type SecretFile struct {
	// Path is the file's absolute path.
	Path string
	// Key is the key path of the first value that reads it, like
	// "servers.github.headers.Authorization".
	Key string
}

// ReadSecretFile returns the secret held by the file at path: its content
// with one trailing newline ("\n" or "\r\n") removed. It never blocks and
// never reads more than [MaxSecretFileBytes]: a FIFO, a device (/dev/zero),
// a folder or any other file that is not a regular file is refused before
// anything is read, and so is a larger file. An empty secret is refused too.
// The error says what is wrong and what to do, and never holds the content.
func ReadSecretFile(path string) (string, error) {
	f, err := openSecretFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		fix := "create it with the secret as its content, or fix the path"
		if errors.Is(err, fs.ErrPermission) {
			fix = "make it readable by the user that runs manifold (and no one else: chmod 600)"
		}
		return "", fmt.Errorf("cannot read %s: %v; %s", path, err, fix)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (it is %s), so it is not read; write the secret into a regular file and name that one", path, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxSecretFileBytes {
		return "", fmt.Errorf("%s holds %d bytes, more than the %d bytes a secret file may hold, so it is not read; name the file that holds only the secret", path, fi.Size(), MaxSecretFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", path, err)
	}
	if len(data) > MaxSecretFileBytes { // it grew since the stat
		return "", fmt.Errorf("%s holds more than the %d bytes a secret file may hold, so it is not read; name the file that holds only the secret", path, MaxSecretFileBytes)
	}
	s := string(data)
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	if s == "" {
		return "", fmt.Errorf("%s is empty; write the secret into it", path)
	}
	return s, nil
}

// fileKind names the kind of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// readableByOthers reports whether the mode lets users other than the
// owner read the file (group or other read bits).
func readableByOthers(m fs.FileMode) bool { return m.Perm()&0o044 != 0 }
