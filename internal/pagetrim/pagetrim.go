// Package pagetrim gives back the pages of the running binary's read-only
// segments (its code, read-only data and the runtime's tables) that the
// process mapped and no longer uses.
//
// A Go binary's start touches pages all over its code and tables (the
// initialisation of hundreds of packages, the first catalog), and the
// kernel's fault-around maps the neighbours of every page touched (64 KB by
// default), so that a proxy at rest counted about 20 MB of its 54 MB binary
// as resident (RssFile) though it runs a small part of it. Those pages are
// clean copies of the file: Release unmaps them (madvise MADV_DONTNEED), the
// page cache keeps them for whoever needs them, and a page the process
// touches again is mapped again from the cache on its next use (a minor
// fault, no read from disk). Mappings that hold anything but clean file
// pages (Anonymous above zero, as a dynamic binary's relocated RELRO) are
// left alone, as is every mapping that is writable or not of the binary.
//
// It imports only low packages of the standard library, so that the reaper
// (internal/reaper), which runs before the rest of the program is
// initialised, can use it.
package pagetrim
