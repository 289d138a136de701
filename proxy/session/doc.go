// Package session knows who is at the other end of the proxy: the
// downstream identity of a request (from the SDK's auth.TokenInfo), the
// peer of an HTTP connection, and the bookkeeping of each client session
// (its calls in flight, its first-list wait). It decides nothing about
// visibility or permission (package policy does), and imports neither the
// proxy nor a face: what it needs of a request comes as parameters.
package session
