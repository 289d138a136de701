// Package bridge carries a tools/call across the protocol eras: the sealed
// requestState handed to 2026-07-28 clients (a modern server's wrapped, the
// proxy's own for a parked call), the calls of such clients parked on legacy
// servers while the clients answer the servers' questions in rounds of
// input, the rounds of input a modern server asks of a legacy client, and
// the retries of parked calls carried to the replica that holds them
// (README "Bridges: what is translated, and the limits"). It decides nothing
// about routing, policy or visibility, and imports neither the proxy nor a
// face: what it needs from the root (the state key, the retry relay, the
// relay, the bound of rounds) comes in its Options; a server's questions
// reach a client by proxy/relay's rules.
package bridge
