package redact

import (
	"strings"
	"unicode"
)

// secretSubstrings mark a key as a credential's when one of its words,
// lowercased, contains one of them.
var secretSubstrings = []string{
	"token", "secret", "passw", "passphrase", "passcode", "authoriz", "authent", "cookie",
	"credential", "apikey", "signature", "private", "session", "bearer", "jwt", "csrf", "xsrf",
	"hmac", "verifier", "keyfile", "privkey", "nonce",
}

// secretWords mark a key as a credential's when one of its words, lowercased,
// is one of them: they are too short to match inside other words ("auth" is
// in "author", "otp" in "footprint", "sig" in "signal").
var secretWords = []string{"auth", "oauth", "pwd", "pw", "pass", "pin", "otp", "totp", "hotp", "mfa", "2fa", "sig", "sid", "pat", "key",
	"refresh", "salt", "priv", "pkce", "mac"}

// SecretKey reports whether k, the name of an argument, header, env variable
// or flag, names a credential. k is split into words at every character that
// is not a letter or digit and at lower-to-upper case changes ("X-Auth-Token"
// is x, auth, token; "apiKey" is api, key); k names a credential when a word
// contains token, secret, passw(ord), passphrase, passcode, authoriz(ation),
// authent(ication), cookie, credential, apikey, signature, private, session,
// bearer, jwt, csrf, xsrf, hmac, verifier, keyfile, privkey or nonce; or is
// auth, oauth, pwd, pw, pass, pin, otp, totp, hotp, mfa, 2fa, sig, sid, pat,
// key, refresh, salt, priv, pkce or mac; or ends in "key" ("accesskey"). Case
// does not matter. "author", "keywords", "signal" and "passenger" are not
// credentials.
func SecretKey(k string) bool {
	for _, t := range keyTokens(k) {
		if secretToken(t) {
			return true
		}
	}
	return false
}

func secretToken(t string) bool {
	for _, s := range secretSubstrings {
		if strings.Contains(t, s) {
			return true
		}
	}
	for _, w := range secretWords {
		if t == w {
			return true
		}
	}
	return strings.HasSuffix(t, "key")
}

// keyTokens splits k into lowercase words (see [SecretKey]).
func keyTokens(k string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(k)
	for i, c := range rs {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			flush()
			continue
		}
		if unicode.IsUpper(c) && len(cur) > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			// apiKey → api|Key; XMLHttp → XML|Http
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return out
}

// Args returns a copy of args, as decoded from JSON, for the audit log: every
// value under a key that names a credential ([SecretKey]) is replaced by
// [Mask], whatever its type, at any depth of nested objects and arrays; every
// other string has its credential shapes hidden ([Shapes]: "Bearer …", URL
// userinfo and query values, known token formats). args is not modified.
func Args(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if SecretKey(k) {
			out[k] = Mask
		} else {
			out[k] = value(v)
		}
	}
	return out
}

func value(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return Args(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = value(e)
		}
		return out
	case string:
		if credential(v) {
			return Mask
		}
		return Shapes(v)
	}
	return v
}

// credential reports whether s is an HTTP credential: "Bearer " or "Basic "
// (in any case) and one word.
func credential(s string) bool {
	scheme, rest, ok := strings.Cut(s, " ")
	return ok && (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "basic")) &&
		rest != "" && !strings.ContainsAny(rest, " \t\r\n")
}
