package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds this command with CGO_ENABLED=0: a static ELF.
func staticBinary(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bin")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildCheck: an image built from a static binary passes check after a
// round trip through its tarball, and its filesystem is extracted.
func TestBuildCheck(t *testing.T) {
	img, err := build(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := tarball.WriteToFile(path, name.MustParseReference("manifold:test").(name.Tag), img); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	if err := check(back, rootfs); err != nil {
		t.Fatalf("check of a good image: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(rootfs, "manifold")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("rootfs/manifold: %v, %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(rootfs, "tmp")); err != nil || !fi.IsDir() {
		t.Errorf("rootfs/tmp: %v, %v", fi, err)
	}
}

func layerWith(t *testing.T, path, body string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCheckRefuses: check fails an image that breaks a promise.
func TestCheckRefuses(t *testing.T) {
	good := staticBinary(t)
	dynamic, err := os.ReadFile("/bin/true") // Debian's: dynamically linked
	if err != nil {
		t.Fatal(err)
	}
	withConfig := func(edit func(*v1.Config)) func(t *testing.T) v1.Image {
		return func(t *testing.T) v1.Image {
			img, err := build(good)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			cf = cf.DeepCopy()
			edit(&cf.Config)
			img, err = mutate.ConfigFile(img, cf)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	for _, tc := range []struct {
		name  string
		image func(t *testing.T) v1.Image
		want  string
	}{
		{"root", withConfig(func(c *v1.Config) { c.User = "" }), `runs as user ""`},
		{"entrypoint", withConfig(func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c"} }), "entrypoint"},
		{"shell", func(t *testing.T) v1.Image {
			img, err := build(good)
			if err != nil {
				t.Fatal(err)
			}
			img, err = mutate.AppendLayers(img, layerWith(t, "bin/sh", "#!"))
			if err != nil {
				t.Fatal(err)
			}
			return img
		}, "/bin/sh: a file besides the binary"},
		{"dynamic", func(t *testing.T) v1.Image {
			img, err := build(dynamic)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}, "dynamically linked"},
		{"not ELF", func(t *testing.T) v1.Image {
			img, err := build([]byte("#!/bin/sh\necho hi\n"))
			if err != nil {
				t.Fatal(err)
			}
			return img
		}, "not an ELF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check(tc.image(t), "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
