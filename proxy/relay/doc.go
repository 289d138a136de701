// Package relay carries what upstream servers send towards clients: their
// requests (sampling, elicitation, roots) to the one client they belong to,
// with the capabilities each process is offered; their log messages and
// progress; the logging level clients set; and which list_changed
// notifications each session gets, and when (listchanged.go). It decides
// nothing about visibility or permission, and imports neither the proxy nor
// a face: the sessions, the servers of the current generation, the client's
// capabilities and a modern client's parked call come from the root as
// funcs (Options), and a server is read through its supervision
// (upstream/supervise) and the Backend interface. Re-registering with the
// SDK the entry an upstream's list_changed is passed on with stays in the
// root (relayListChanged: it reads the catalog and the registry).
package relay
