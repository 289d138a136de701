// Package route is the one call pipeline of the proxy (ARCHITECTURE §1 "The
// house"): a tools/call resolved, admitted, connected, bridged and sent, its
// result through the filters, in the order the composition gives it. It
// reaches the rooms below it and the root only through Host; it never
// imports the root (package proxy) or a face, and never branches on the era.
package route
