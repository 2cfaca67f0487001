// Package sockmap probes what this kernel's BPF sockmap does between an AF_UNIX
// stream socket and a TCP socket — the question behind an in-kernel relay for the
// migration proxy's plain path (issue #30). A relay here is two one-slot
// sockmaps, one per leg, each with a stream verdict program that adds the
// chunk's length to a counter and redirects the chunk to the other leg's map
// (egress: sent on that socket; BPF_F_INGRESS: queued for that socket's own
// reader). The programs are a handful of instructions assembled here and loaded
// with raw bpf(2) calls, so nothing beyond golang.org/x/sys is needed.
//
// The tests are the evidence vendor-patches/README.md ("Below the floor") cites:
// every direction delivers the bytes intact, but only unix -> TCP keeps the
// sender's flow control; TCP -> unix takes everything the TCP peer sends into
// the unix leg's backlog whether or not anyone reads it.
package sockmap
