package qemu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// VM is one QEMU process and its QMP connection.
type VM struct {
	cmd     *exec.Cmd
	QMP     *QMP
	exited  chan struct{} // closed once QEMU has been reaped
	waitErr error         // cmd.Wait's result, valid after exited
	// MemBytes is the guest RAM.
	MemBytes int64
}

// PID is the QEMU process's.
func (vm *VM) PID() int { return vm.cmd.Process.Pid }

// Start launches QEMU through wrap (e.g. "ip netns exec NS"), in dir, named name.
// incoming starts it as a migration destination (-incoming defer, -S).
func Start(wrap []string, dir, name string, a *Assets, incoming bool) (*VM, error) {
	qmpPath := filepath.Join(dir, name+".qmp")
	_ = os.Remove(qmpPath)
	size := fmt.Sprintf("%dM", a.MemBytes>>20)
	mem := "memory-backend-file,id=mem,size=" + size + ",mem-path=" + a.RAM + ",share=off"
	if incoming {
		mem = "memory-backend-ram,id=mem,size=" + size
	}
	// debug-threads: QEMU names its threads ("CPU 0/TCG", "live_migration"), so
	// MigrationCPU can leave the vCPU out.
	args := []string{"qemu-system-x86_64", "-name", name + ",debug-threads=on", "-accel", "tcg", "-machine", "q35,memory-backend=mem",
		"-object", mem, "-m", size, "-nodefaults", "-display", "none", "-kernel", a.Kernel,
		"-qmp", "unix:" + qmpPath + ",server=on,wait=off"}
	if incoming {
		// -S: the destination stays paused once the migration has landed, so its
		// memory can be compared with the paused source's before it runs on.
		args = append(args, "-incoming", "defer", "-S")
	}
	argv := append(append([]string{}, wrap...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	// Killed with the test process (a -timeout panic must not leave QEMU running).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("qemu-system-x86_64: %w", err)
	}
	vm := &VM{cmd: cmd, exited: make(chan struct{}), MemBytes: a.MemBytes}
	go func() {
		vm.waitErr = cmd.Wait()
		logf.Close()
		close(vm.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		q, err := DialQMP(qmpPath)
		if err == nil {
			vm.QMP = q
			return vm, nil
		}
		select {
		case <-vm.exited:
			log, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			return nil, fmt.Errorf("qemu exited: %v: %s", vm.waitErr, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			vm.Kill()
			return nil, fmt.Errorf("qemu QMP not up after 20s: %w", err)
		}
	}
}

// Kill ends QEMU (SIGKILL) and waits for it, at most 10 s. It may be called
// any number of times; once QEMU is gone it returns at once.
func (vm *VM) Kill() {
	if vm.QMP != nil {
		vm.QMP.Close()
	}
	select {
	case <-vm.exited:
		return
	default:
	}
	_ = vm.cmd.Process.Kill()
	select {
	case <-vm.exited:
	case <-time.After(10 * time.Second):
		fmt.Fprintf(os.Stderr, "qemu pid %d not reaped 10s after SIGKILL\n", vm.cmd.Process.Pid)
	}
}

// Exited reports whether the QEMU process has ended.
func (vm *VM) Exited() bool {
	select {
	case <-vm.exited:
		return true
	default:
		return false
	}
}
