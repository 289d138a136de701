// Package streamable is the HTTP face of the proxy (ARCHITECTURE §1 "The
// house"): the streamable HTTP endpoint /mcp and its checks and limits, the
// lean calls and lists served without the SDK's transport, the sessions
// shared across replicas, the answers relayed between them, and the event
// store that lets a stream be resumed. It reaches the proxy through Core
// only: it must not import the root (package proxy) or the other face.
package streamable
