package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The bench's near-free endpoints ("proxies alone"): the payload never enters
// user space at either end, so the sender and the sink cost next to nothing and
// the proxies have the cores to themselves, as on a node with cores to spare.
// The sender vmsplices one 1 MiB buffer into a pipe (page references, no copy)
// and splices the pipe into the socket; the sink splices the socket into a pipe
// and the pipe into /dev/null (discarded without a copy). Both run blocking
// splice(2) loops on a locked thread, like the floor relay.

// kernelPipe is a blocking pipe of 1 MiB (fs.pipe-max-size).
func kernelPipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, 0, err
	}
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, streamBuffer)
	return p[0], p[1], nil
}

// blockingFD duplicates c's socket in blocking mode (the duplicate shares the
// open file description, so c is blocking too: c is only closed afterwards).
func blockingFD(c net.Conn) (*os.File, error) {
	fc, ok := c.(interface{ File() (*os.File, error) })
	if !ok {
		return nil, fmt.Errorf("%T has no file", c)
	}
	f, err := fc.File()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// spliceAll moves n bytes from the pipe in to out.
func spliceAll(in, out, n int) error {
	for n > 0 {
		m, err := unix.Splice(in, nil, out, nil, n, unix.SPLICE_F_MOVE)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if m == 0 {
			return errors.New("splice: nothing moved")
		}
		n -= int(m)
	}
	return nil
}

// kernelSend writes size bytes of buf (repeated) to c without copying them.
func kernelSend(c net.Conn, buf []byte, size int64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := blockingFD(c)
	if err != nil {
		return err
	}
	defer f.Close()
	r, w, err := kernelPipe()
	if err != nil {
		return err
	}
	defer unix.Close(r)
	defer unix.Close(w)
	for left := size; left > 0; {
		chunk := buf
		if left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		iov := []unix.Iovec{{Base: &chunk[0]}}
		iov[0].SetLen(len(chunk))
		n, err := unix.Vmsplice(w, iov, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("vmsplice: %w", err)
		}
		if err := spliceAll(r, int(f.Fd()), n); err != nil {
			return err
		}
		left -= int64(n)
	}
	return nil
}

// kernelSink reads c until size bytes arrived or EOF, discarding them in the
// kernel; it returns how many arrived.
func kernelSink(c net.Conn, size int64) (int64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := blockingFD(c)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	r, w, err := kernelPipe()
	if err != nil {
		return 0, err
	}
	defer unix.Close(r)
	defer unix.Close(w)
	var got int64
	for got < size {
		n, err := unix.Splice(int(f.Fd()), nil, w, nil, streamBuffer, unix.SPLICE_F_MOVE)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return got, fmt.Errorf("after %d of %d bytes: splice: %w", got, size, err)
		}
		if n == 0 {
			return got, fmt.Errorf("after %d of %d bytes: EOF", got, size)
		}
		if err := spliceAll(r, int(null.Fd()), int(n)); err != nil {
			return got, err
		}
		got += n
	}
	return got, nil
}
