// Package netlab builds the two-node lab of the integration suite: two network
// namespaces joined by a management link and a separate migration link (veth
// pairs, the target's end named migration0, an 802.1Q sub-interface where the
// kernel has 8021q), addressed only inside those namespaces, and removed again.
package netlab
