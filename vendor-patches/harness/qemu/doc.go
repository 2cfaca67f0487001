// Package qemu runs the real QEMU of the integration suite: it assembles a tiny
// multiboot guest with binutils that keeps dirtying 4 MiB, starts TCG virtual
// machines (256 MiB RAM backed by a file of random bytes) and drives live
// migration over QMP with every wait bounded.
package qemu
