package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"syscall"

	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
)

// request is one command; each gets one response line.
type request struct {
	// Op: start-target (Key, Root, Sockets, DisableTLS → Ports), start-source
	// (Key, Addr, Ports, Dir, DisableTLS → Files), stop (Key: both sides'
	// listeners), bytes (Key → Bytes), cpu (→ CPU, Switches, Procs).
	Op  string `json:"op"`
	Key string `json:"key,omitempty"`
	// Root is the target launcher's mount root; Sockets its sockets below it
	// (virtqemud's and the per-port ones), handed to the proxy as
	// LauncherSockets (patch 0011).
	Root    string   `json:"root,omitempty"`
	Sockets []string `json:"sockets,omitempty"`
	// Addr is the target's migration address, Ports its listeners' ports mapped to
	// their proxy keys (targetDirectMigrationNodePorts), Dir the source
	// launcher's directory the source sockets go into (migrationproxy/ below it).
	Addr  string         `json:"addr,omitempty"`
	Ports map[string]int `json:"ports,omitempty"`
	Dir   string         `json:"dir,omitempty"`
	// DisableTLS is the KubeVirt CR's migrations.disableTLS when the listener starts.
	DisableTLS bool `json:"disableTLS,omitempty"`
}

type response struct {
	Err   string         `json:"err,omitempty"`
	Ports map[string]int `json:"ports,omitempty"`
	Files []string       `json:"files,omitempty"`
	// Bytes is kubevirt_vmi_migration_proxy_transferred_bytes_total of Key per
	// "side/direction/port_key".
	Bytes map[string]float64 `json:"bytes,omitempty"`
	// CPU is the process's user + system time in nanoseconds (getrusage, all
	// threads), Switches its context switches, Procs its GOMAXPROCS.
	CPU      int64 `json:"cpu,omitempty"`
	Switches int64 `json:"switches,omitempty"`
	Procs    int   `json:"procs,omitempty"`
}

type proxy struct {
	manager       migrationproxy.ProxyManager
	setDisableTLS func(bool)
}

// serve answers the requests on in until it closes (the stand-in went away), then
// stops every listener.
func serve(in io.Reader, enc *json.Encoder, p *proxy) error {
	defer p.manager.InitiateGracefulShutdown()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req request
		resp := response{}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp.Err = err.Error()
		} else if err := p.handle(&req, &resp); err != nil {
			resp.Err = err.Error()
		}
		if err := enc.Encode(&resp); err != nil {
			return err
		}
	}
	return sc.Err()
}

func (p *proxy) handle(req *request, resp *response) error {
	switch req.Op {
	case "start-target":
		p.setDisableTLS(req.DisableTLS)
		if err := kvproxy.StartTarget(p.manager, req.Key, req.Root, req.Sockets...); err != nil {
			return err
		}
		resp.Ports = p.manager.GetTargetListenerPorts(req.Key)
	case "start-source":
		p.setDisableTLS(req.DisableTLS)
		if err := p.manager.StartSourceListener(req.Key, req.Addr, req.Ports, req.Dir); err != nil {
			return err
		}
		resp.Files = p.manager.GetSourceListenerFiles(req.Key)
	case "stop":
		p.manager.StopSourceListener(req.Key)
		p.manager.StopTargetListener(req.Key)
	case "bytes":
		b, err := kvproxy.ProxyBytes(req.Key)
		if err != nil {
			return err
		}
		resp.Bytes = b
	case "cpu":
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return err
		}
		resp.CPU = ru.Utime.Nano() + ru.Stime.Nano()
		resp.Switches = ru.Nvcsw + ru.Nivcsw
		resp.Procs = runtime.GOMAXPROCS(0)
	default:
		return fmt.Errorf("unknown op %q", req.Op)
	}
	return nil
}
