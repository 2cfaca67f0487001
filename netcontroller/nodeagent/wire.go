package nodeagent

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// The probe packet: a 40-byte header, then padding up to the size probed.
//
//	0  magic "MGNP"
//	4  version (1)
//	5  kind: kindProbe or kindReply
//	6  reserved (2)
//	8  network identity (8): the first 8 bytes of SHA-256 of the network's namespace/name
//	16 sequence number (8), echoed by the reply
//	24 size (4): the probe's UDP payload size as sent; the reply echoes the size received
//	28 reserved (4)
//	32 echo (8): in a probe, the highest sequence number the sender received in a probe from the
//	   destination (how a node tells that its own probes are lost while the peer's arrive)
const (
	headerLen   = 40
	wireVersion = 1
	kindProbe   = 1
	kindReply   = 2
)

var magic = [4]byte{'M', 'G', 'N', 'P'}

// NetworkID is the identity a network's probes carry.
type NetworkID [8]byte

// IDOf is network's identity (network is the NAD's namespace/name).
func IDOf(network string) NetworkID {
	sum := sha256.Sum256([]byte(network))
	var id NetworkID
	copy(id[:], sum[:8])
	return id
}

// header is a decoded probe header.
type header struct {
	kind uint8
	net  NetworkID
	seq  uint64
	size uint32
	echo uint64
}

// encode writes h into b (len(b) ≥ headerLen); the rest of b is left as it is.
func (h header) encode(b []byte) {
	copy(b[0:4], magic[:])
	b[4], b[5] = wireVersion, h.kind
	b[6], b[7] = 0, 0
	copy(b[8:16], h.net[:])
	binary.BigEndian.PutUint64(b[16:24], h.seq)
	binary.BigEndian.PutUint32(b[24:28], h.size)
	clear(b[28:32])
	binary.BigEndian.PutUint64(b[32:40], h.echo)
}

// Reasons a packet is not one of ours.
var (
	errShort   = errors.New("shorter than a probe header")
	errMagic   = errors.New("not a migranet probe")
	errVersion = errors.New("unknown probe version")
	errKind    = errors.New("unknown probe kind")
	errNetwork = errors.New("a probe of another network")
)

// decode reads a packet of network id; anything else is an error and is ignored.
func decode(b []byte, id NetworkID) (header, error) {
	switch {
	case len(b) < headerLen:
		return header{}, errShort
	case [4]byte(b[0:4]) != magic:
		return header{}, errMagic
	case b[4] != wireVersion:
		return header{}, errVersion
	case b[5] != kindProbe && b[5] != kindReply:
		return header{}, errKind
	case NetworkID(b[8:16]) != id:
		return header{}, errNetwork
	}
	return header{kind: b[5], net: id, seq: binary.BigEndian.Uint64(b[16:24]), size: binary.BigEndian.Uint32(b[24:28]), echo: binary.BigEndian.Uint64(b[32:40])}, nil
}

// udpPayload is the UDP payload that fills an IP packet of frame bytes to addr's family:
// frame − 28 for IPv4 (20-byte IP header, 8-byte UDP header), frame − 48 for IPv6.
func udpPayload(is4 bool, frame int) int {
	if is4 {
		return frame - 28
	}
	return frame - 48
}
