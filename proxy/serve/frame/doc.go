// Package frame holds what the proxy's two faces share (the stdio face and
// the streamable HTTP face): the check of one downstream frame as the SDK
// would read it, the request ids the SDK would echo otherwise, and the
// JSON-RPC response the lean paths write. It serves no session itself, and
// no room imports it (ARCHITECTURE §1 "The house").
package frame
