package session

// Book is the proxy's bookkeeping of its downstream sessions and clients:
// one component of the proxy's Server.
type Book struct {
	Clients Clients // the clients that listed or called, and their catalog modes
	Calls   Calls   // each HTTP session's calls in flight, which its DELETE cancels
	Waits   Waits   // when each session's wait for a listable catalog ends (the first-list wait)
}
