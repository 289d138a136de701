package config

// Pin modes (the top-level and per-server pin key).
const (
	PinQuarantine = "quarantine"
	PinWarn       = "warn"
	PinOff        = "off"
	// DefaultPin is pin's default: a definition that changed since it was
	// approved is hidden until a person approves it.
	DefaultPin = PinQuarantine
	// DefaultLockFile is lock_file's default, beside the config file.
	DefaultLockFile = "manifold.lock"
)

const pinFix = `write "quarantine" (hide a new or changed definition until ` + "`manifold approve`" + `, the default), "warn" (serve it, flagged in the log, status and doctor) or "off"`

// pinKeys decodes the top-level pin and lock_file keys.
func (d *decoder) pinKeys(root *table, cfg *Config) {
	cfg.Pin = DefaultPin
	if m, ok := root.str("pin"); ok {
		if validPin(m) {
			cfg.Pin = m
		} else {
			root.errorf("pin", "%q is not a pin mode; %s", m, pinFix)
		}
	}
	cfg.LockFile = resolve(cfg.Dir, DefaultLockFile)
	if f, ok := root.str("lock_file"); ok {
		if f == "" {
			root.errorf("lock_file", `lock_file is empty; give a path (relative to the config file's folder), or remove the key for "manifold.lock"`)
		} else {
			cfg.LockFile = resolve(cfg.Dir, f)
		}
	}
}

// serverPin decodes a server's pin key; the top-level mode when absent.
func serverPin(t *table, cfg *Config) string {
	if m, ok := t.str("pin"); ok {
		if validPin(m) {
			return m
		}
		t.errorf("pin", "%q is not a pin mode; %s", m, pinFix)
	}
	return cfg.Pin
}

func validPin(m string) bool {
	switch m {
	case PinQuarantine, PinWarn, PinOff:
		return true
	}
	return false
}
