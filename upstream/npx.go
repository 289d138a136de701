package upstream

// This file knows what Manifold needs of npx (npm exec), the launcher most
// servers are started with (issue 40): the folder of npm's cache an install
// goes to, so that an interrupted install is not left behind (the stop
// sequence waits for it) and a broken one is named with the folder to delete.

import (
	"crypto/sha512"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// npxInstallGrace bounds the wait of the stop sequence for an npx that may
// still be installing its server (it has written nothing yet): closing its
// stdin lets it finish, start the server, which reads the end of its input
// and exits, and exit itself; a signal in the middle of the install leaves
// npm's cache with a node_modules and no package.json, and every later start
// fails until the folder is deleted by hand. A first download of a reference
// server takes 2-10 s; a minute covers a slow network.
const npxInstallGrace = 60 * time.Second

// npxStartBound bounds a server's start while npx installs it: its
// startup_timeout does not count the download, up to this long in all.
const npxStartBound = 5 * time.Minute

// npxPackages returns the packages an npx or `npm exec` command line
// installs (its --package values, else its first argument), or nil if
// command is neither.
func npxPackages(command string, args []string) []string {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(command)), ".cmd")
	switch base {
	case "npx":
	case "npm":
		i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
		if i < 0 || (args[i] != "exec" && args[i] != "x") {
			return nil
		}
		args = args[i+1:]
	default:
		return nil
	}
	var pkgs []string
	var first string
	call := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if first == "" && i+1 < len(args) {
				first = args[i+1]
			}
			i = len(args)
		case a == "-p" || a == "--package":
			if i+1 < len(args) {
				pkgs = append(pkgs, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--package="):
			pkgs = append(pkgs, strings.TrimPrefix(a, "--package="))
		case a == "-c" || a == "--call":
			call = true
			i++
		case strings.HasPrefix(a, "--call="):
			call = true
		case strings.HasPrefix(a, "-"):
			// a flag without a value (-y, --yes, -q, …)
		case first == "":
			first = a
			i = len(args) // the rest are the command's own arguments
		}
	}
	if len(pkgs) == 0 && !call && first != "" {
		pkgs = []string{first}
	}
	return pkgs
}

// npmCacheDir is npm's cache folder for a server with env (KEY=VALUE
// entries added to the proxy's environment): npm_config_cache, else ~/.npm
// (%LocalAppData%\npm-cache on Windows). A cache set in an .npmrc is not
// seen; "" if there is no home either.
func npmCacheDir(env []string) string {
	for _, key := range []string{"npm_config_cache", "NPM_CONFIG_CACHE"} {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], key+"="); ok && v != "" {
				return v
			}
		}
		if v := os.Getenv(key); v != "" {
			return v
		}
	}
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "npm-cache")
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".npm")
}

// npxInstallDir is the folder npx installs the packages of command and
// args into, <npm cache>/_npx/<hash>, named as npm's libnpmexec names it:
// the first 16 hex digits of the SHA-512 of the package specs, sorted, one
// a line. It is "" for a command that is not npx (or `npm exec`), and for
// a spec that is a local folder (npm resolves it first).
func npxInstallDir(command string, args, env []string) string {
	pkgs := npxPackages(command, args)
	if len(pkgs) == 0 {
		return ""
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, ".") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "file:") {
			return ""
		}
	}
	cache := npmCacheDir(env)
	if cache == "" {
		return ""
	}
	pkgs = slices.Clone(pkgs)
	slices.Sort(pkgs) // localeCompare; equal to byte order for package specs
	sum := sha512.Sum512([]byte(strings.Join(pkgs, "\n")))
	return filepath.Join(cache, "_npx", hex.EncodeToString(sum[:])[:16])
}

// npxInstalled reports whether dir holds a finished npx install: npm
// writes its package.json once every package is in place.
func npxInstalled(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "package.json"))
	return err == nil
}
