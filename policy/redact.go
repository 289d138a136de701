package policy

import "strings"

// Redacted replaces a secret value in audit records.
const Redacted = "[redacted]"

// secretWords mark a key as holding a secret when the key, lowercased,
// contains one of them.
var secretWords = []string{"token", "key", "secret", "password", "passwd", "authorization", "cookie", "credential"}

// RedactArgs returns a copy of args, as decoded from JSON, in which every
// value under a key that looks like a secret is replaced by [Redacted],
// whatever its type, at any depth of nested objects and arrays. A key looks
// like a secret when it contains, in any case, token, key, secret,
// password, passwd, authorization, cookie or credential ("api_key",
// "X-Auth-Token", "keywords" alike). String values that look like HTTP
// credentials ("Bearer abc…", "Basic dXN…") are redacted under any key. args is not modified.
func RedactArgs(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if secretKey(k) {
			out[k] = Redacted
		} else {
			out[k] = redact(v)
		}
	}
	return out
}

func redact(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return RedactArgs(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redact(e)
		}
		return out
	case string:
		if credential(v) {
			return Redacted
		}
	}
	return v
}

func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// credential reports whether s looks like an HTTP credential: "Bearer " or
// "Basic " (in any case) and one word.
func credential(s string) bool {
	scheme, rest, ok := strings.Cut(s, " ")
	return ok && (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "basic")) &&
		rest != "" && !strings.ContainsAny(rest, " \t\r\n")
}
