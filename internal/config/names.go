package config

// These checks are what the regular expressions ^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$,
// ^[A-Za-z0-9_-]{0,32}$, ^[A-Za-z0-9_-]{1,64}$ and ^[0-9A-Fa-f]{64}$ say,
// written out: compiled at package level, those bounded repetitions cost
// about 140 KB of allocations in every process that runs the binary (the
// reaper too), for a handful of checks per config load.

// validServerName reports whether s is 1 to 32 letters, digits, '_' or '-',
// starting with a letter or digit: a server's or a plugin's name.
func validServerName(s string) bool {
	return len(s) >= 1 && len(s) <= 32 && isAlnum(s[0]) && nameChars(s)
}

// validPrefix reports whether s is at most 32 letters, digits, '_' or '-'.
func validPrefix(s string) bool { return len(s) <= 32 && nameChars(s) }

// validExposedName reports whether s is 1 to 64 letters, digits, '_' or '-':
// what an exposed tool name may be.
func validExposedName(s string) bool { return len(s) >= 1 && len(s) <= 64 && nameChars(s) }

// validSHA256 reports whether s is 64 hex digits, of either case.
func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func nameChars(s string) bool {
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
