// Package procgroup signals and watches the process group a child leads,
// by its pid: signal the group, wait for the leader to exit without reaping
// it, tell whether other members still live. On Linux; elsewhere the leader
// alone is signalled and nothing is waited for.
package procgroup
