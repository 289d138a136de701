// Package supervise keeps one backend server alive: it starts it, restarts
// it with backoff, checks its health, starts it lazily and stops it when
// idle, keeps its last listing (and the cached catalog on disk), and reports
// to the proxy through the hooks the proxy sets. It knows nothing of names,
// policy or the other servers, and imports nothing under proxy/.
package supervise
