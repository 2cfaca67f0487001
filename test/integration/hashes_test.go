package integration

import (
	. "github.com/onsi/gomega"
)

// smallRange has 5 usable addresses (.2-.6 of 10.89.0.0/29): 3 nodes + 2.
const smallRange = `{"clusterNetwork":"migration","range":"10.89.0.0/29","exclude":["10.89.0.1"]}`

// The NAD names and applied hashes the specs expect, computed outside migranet (never with its
// parser or hash, which a spec would then only compare with itself): the canonical form of each
// value written by hand — keys in the order clusterNetwork, vlan, range, exclude, mtu; vlan always
// present; a bare exclude IP as /32 — and hashed with
//
//	printf '%s' '<canonical value>' | sha256sum
//
// The NAD is vm-migration-network-<first 10 hex digits>.
var expectedHashes = map[string]string{
	// canonical: the value itself
	net24: "39a0dfbc3bbc717879e5c8a73404e9405c3510fb414422223ddc0244ef9eb5e6",
	net25: "de924797cf7dbf6dbfba7f3c7fc67b7ee6bc50fe323c9ecec2c1b831ef8f7543",
	// canonical: {"clusterNetwork":"migration","vlan":0,"range":"10.89.0.0/29","exclude":["10.89.0.1/32"]}
	smallRange: "8c13f21a6e7489b6bbf765caf0001eb4ddb8e609d1523fc597bca42c9970e7f3",
	// canonical: the value itself (the IPv6 /64)
	net64: "d915f190e254ee0f38c4f724f254557f9fc7fbdde3775c9924d530b93fc54f0e",
	// canonical: {"clusterNetwork":"migration","vlan":0,"range":"fd00:10:78::/125","exclude":["fd00:10:78::1/128","fd00:10:78::6/128"]}
	net125: "3f994ca364bc817cc592f79952430725eb21c5207c433926aee0e01edb666cb7",
	// rangeValue(a, b), canonical as written
	`{"clusterNetwork":"migration","vlan":29,"range":"10.60.19.0/24"}`: "b7b6afd31cd93cff1333ecd562185fd6a05ec3c8dc123f108997745f367202b8",
	`{"clusterNetwork":"migration","vlan":11,"range":"10.61.1.0/24"}`:  "599e0fea40894823dc53381a07e4a2cef3ef3ee5026e365315d47fab01d494cc",
	`{"clusterNetwork":"migration","vlan":12,"range":"10.61.2.0/24"}`:  "5a2bcf3d802910b5910f8817c3d20b97833d1b9906ca6bd874fa7b369ccaf9f2",
	`{"clusterNetwork":"migration","vlan":13,"range":"10.61.3.0/24"}`:  "e6e33d754a701a0f36a29f2dcf1ab144267759699ac9cc357585aedff866526a",
}

// mustHash is the applied hash value must get.
func mustHash(value string) string {
	h, ok := expectedHashes[value]
	ExpectWithOffset(2, ok).To(BeTrue(), "no independently computed hash for %s: add it to expectedHashes", value)
	return h
}

// expectedNAD is the NAD value must render to.
func expectedNAD(value string) string {
	return "vm-migration-network-" + mustHash(value)[:10]
}
