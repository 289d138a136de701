package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/manifold-mcp/manifold/internal/tokenstore"
)

// This file is RFC 7009 token revocation, run by `manifold logout`, and
// what login keeps of the authorization server's metadata for it.

// ErrNoRevocation is returned (wrapped) by [Revoke] when the credential
// names no revocation endpoint: the authorization server's metadata had
// none.
var ErrNoRevocation = errors.New("the authorization server names no revocation endpoint")

// Revoke revokes cred's refresh token and access token at its
// authorization server's revocation endpoint (RFC 7009): the refresh token
// first, since revoking it ends the grant at most servers. It returns an
// error wrapping ErrNoRevocation when there is no endpoint, or one that
// says which token the server did not revoke; the error never holds a
// token.
func Revoke(ctx context.Context, cred *tokenstore.Credential, client *http.Client) error {
	if cred.RevocationURL == "" {
		return ErrNoRevocation
	}
	if client == nil {
		client = http.DefaultClient
	}
	var errs []error
	for _, t := range []struct{ token, hint string }{
		{cred.RefreshToken, "refresh_token"},
		{cred.AccessToken, "access_token"},
	} {
		if t.token == "" {
			continue
		}
		if err := revokeOne(ctx, client, cred, t.token, t.hint); err != nil {
			errs = append(errs, fmt.Errorf("the %s: %w", strings.ReplaceAll(t.hint, "_", " "), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("revocation at %s: %w", cred.RevocationURL, errors.Join(errs...))
	}
	return nil
}

// revokeOne posts one token to the revocation endpoint, authenticating the
// client as at the token endpoint.
func revokeOne(ctx context.Context, client *http.Client, cred *tokenstore.Credential, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := cred.ClientSecret != "" && (oauth2.AuthStyle(cred.AuthStyle) == oauth2.AuthStyleInHeader || oauth2.AuthStyle(cred.AuthStyle) == oauth2.AuthStyleAutoDetect)
	if !basic {
		form.Set("client_id", cred.ClientID)
		if cred.ClientSecret != "" {
			form.Set("client_secret", cred.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cred.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("bad revocation endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(cred.ClientID), url.QueryEscape(cred.ClientSecret))
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is said once, by Revoke
		}
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Error string `json:"error"`
		Desc  string `json:"error_description"`
	}
	msg := fmt.Sprintf("the server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg += ": " + printable(e.Error, 64)
		if e.Desc != "" {
			msg += " (" + printable(e.Desc, 200) + ")"
		}
	}
	return errors.New(msg)
}

// printable is s cut to n bytes, with anything but printable ASCII as '?':
// the text comes from a server.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// asMetadata is what login keeps of an authorization server's metadata
// (RFC 8414, or OpenID Connect discovery) that the SDK fetched.
type asMetadata struct {
	Issuer             string `json:"issuer"`
	TokenEndpoint      string `json:"token_endpoint"`
	RevocationEndpoint string `json:"revocation_endpoint"`
}

// metadataRecorder is the transport of login's requests: it keeps the
// authorization server metadata documents that pass through it, since the
// SDK's flow does not hand them out.
type metadataRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	docs []asMetadata // guarded by mu
}

func (m *metadataRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		!(strings.Contains(req.URL.Path, "/.well-known/oauth-authorization-server") || strings.Contains(req.URL.Path, "/.well-known/openid-configuration")) {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var md asMetadata
	if rerr == nil && json.Unmarshal(body, &md) == nil && md.TokenEndpoint != "" {
		m.mu.Lock()
		m.docs = append(m.docs, md)
		m.mu.Unlock()
	}
	return resp, nil
}

// revocationFor is the revocation endpoint of the metadata whose token
// endpoint is tokenURL (the one the flow used); "" if none named one, or
// named one that tokens must not be sent to (see safeEndpoint).
func (m *metadataRecorder) revocationFor(tokenURL string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, md := range m.docs {
		if md.TokenEndpoint != tokenURL || md.RevocationEndpoint == "" {
			continue
		}
		if safeEndpoint(md.RevocationEndpoint) {
			return md.RevocationEndpoint
		}
	}
	return ""
}

// safeEndpoint reports whether tokens may be posted to raw: an https URL,
// or http on a loopback address (a local test or development server).
func safeEndpoint(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
