// Command ociimage builds the Manifold image without a container engine and
// checks it: the static binary as the one layer of an empty base (what
// deploy/Dockerfile's FROM scratch builds), written as a tarball that
// `docker load`, `podman load` and `crane push` take.
//
//	ociimage build -binary manifold -tag manifold:dev -o manifold-image.tar
//	ociimage check [-rootfs DIR] manifold-image.tar
//
// check refuses an image that runs as root, has a shell or any file but the
// binary and /tmp, whose binary is not a static ELF (scratch has no dynamic
// loader), or whose entrypoint is not the binary; -rootfs also extracts its
// filesystem into DIR (to run it in namespaces of its own, without an
// engine). It must not pull anything: the base is empty.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image's settings; deploy/Dockerfile says the same.
const (
	user       = "65532:65532"
	binaryPath = "manifold"
)

var (
	entrypoint = []string{"/manifold"}
	cmd        = []string{"serve", "--config", "/etc/manifold/proxy.toml", "--http", "0.0.0.0:7777", "--allow-remote"}
	env        = []string{"HOME=/tmp", "XDG_CACHE_HOME=/tmp/cache", "XDG_CONFIG_HOME=/etc/manifold-config"}
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: ociimage build -binary FILE [-tag TAG] [-o OUT.tar] | ociimage check [-rootfs DIR] IMAGE.tar")
	}
	switch args[0] {
	case "build":
		fs := flag.NewFlagSet("build", flag.ContinueOnError)
		bin := fs.String("binary", "", "the static manifold binary")
		tag := fs.String("tag", "manifold:dev", "the image's name and tag")
		out := fs.String("o", "manifold-image.tar", "the tarball to write")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		b, err := os.ReadFile(*bin)
		if err != nil {
			return err
		}
		img, err := build(b)
		if err != nil {
			return err
		}
		ref, err := name.NewTag(*tag)
		if err != nil {
			return fmt.Errorf("-tag %q: %w", *tag, err)
		}
		if err := tarball.WriteToFile(*out, ref, img); err != nil {
			return fmt.Errorf("write %s: %w", *out, err)
		}
		d, _ := img.Digest()
		fmt.Printf("ociimage: wrote %s (%s, %s)\n", *out, ref, d)
		return nil
	case "check":
		fs := flag.NewFlagSet("check", flag.ContinueOnError)
		rootfs := fs.String("rootfs", "", "extract the image's filesystem into this folder")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("usage: ociimage check [-rootfs DIR] IMAGE.tar")
		}
		img, err := tarball.ImageFromPath(fs.Arg(0), nil)
		if err != nil {
			return fmt.Errorf("read %s: %w", fs.Arg(0), err)
		}
		if err := check(img, *rootfs); err != nil {
			return fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
		fmt.Printf("ociimage: %s ok: user %s, entrypoint %v, no shell, a static binary alone\n", fs.Arg(0), user, entrypoint)
		return nil
	}
	return fmt.Errorf("unknown command %q: want build or check", args[0])
}

// build makes the image: one layer holding the binary (root-owned, not
// writable by the user it runs as) and an empty /tmp, on an empty base.
func build(binary []byte) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: binaryPath, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(binary))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.User = user
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env = entrypoint, cmd, env
	cf.Config.ExposedPorts = map[string]struct{}{"7777/tcp": {}}
	return mutate.ConfigFile(img, cf)
}

// check verifies what the image promises; with rootfs not empty it also
// extracts the image's files there.
func check(img v1.Image, rootfs string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	var errs []error
	if cf.Config.User != user {
		errs = append(errs, fmt.Errorf("runs as user %q, want %q (not root)", cf.Config.User, user))
	}
	if !slices.Equal(cf.Config.Entrypoint, entrypoint) {
		errs = append(errs, fmt.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, entrypoint))
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read the image's files: %w", err)
		}
		p := strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")
		switch {
		case p == binaryPath && h.Typeflag == tar.TypeReg:
			seen = true
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := static(b); err != nil {
				errs = append(errs, fmt.Errorf("/%s: %w", p, err))
			}
			if h.Mode&0o022 != 0 || h.Uid == 65532 {
				errs = append(errs, fmt.Errorf("/%s can be changed by the user it runs as (mode %o, uid %d)", p, h.Mode, h.Uid))
			}
			if rootfs != "" {
				if err := os.WriteFile(filepath.Join(rootfs, p), b, 0o755); err != nil {
					return err
				}
			}
		case p == "tmp" && h.Typeflag == tar.TypeDir:
			if rootfs != "" {
				if err := os.MkdirAll(filepath.Join(rootfs, p), 0o755); err != nil {
					return err
				}
				if err := os.Chmod(filepath.Join(rootfs, p), 0o777|os.ModeSticky); err != nil {
					return err
				}
			}
		default:
			errs = append(errs, fmt.Errorf("/%s: a file besides the binary and /tmp (a shell or a base image's files?)", p))
		}
	}
	if !seen {
		errs = append(errs, fmt.Errorf("no /%s in the image", binaryPath))
	}
	return errors.Join(errs...)
}

// static reports whether b is an ELF executable that needs no dynamic
// loader (scratch has none).
func static(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("a dynamically linked executable (it needs a loader that scratch has not): build it with CGO_ENABLED=0")
		}
	}
	return nil
}
