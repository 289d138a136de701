// Package auth authenticates the clients of Manifold's HTTP endpoint: it
// validates a request's bearer token (a JWT access token against its
// issuer's keys, or a static API key) and turns it into an [Identity] on the
// request's context, answering 401 or 403 with the OAuth 2.0 challenge that
// the MCP authorization spec asks of a protected resource (RFC 6750,
// RFC 9728). It serves no MCP, reads no config file and never forwards a
// token anywhere.
package auth
