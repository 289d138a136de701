// Package stdio is the proxy's stdio face: it serves one downstream client
// over newline-delimited JSON-RPC, checks every frame, answers tools/call and
// prepared tools/list on the lean path and splices everything else into the
// SDK's session. It routes no call and reads no catalog itself (the root does,
// through Core), and it never imports package proxy or the HTTP face
// (ARCHITECTURE §1 "The house").
package stdio
