package node

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
	ephemeraldiskutils "kubevirt.io/kubevirt/pkg/ephemeral-disk-utils"
	migrationproxy "kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy"
)

// Serve runs a node until in is closed.
func Serve(in io.Reader, out io.Writer) error {
	ephemeraldiskutils.MockDefaultOwnershipManager()
	if err := kvproxy.RegisterMetrics(); err != nil {
		return err
	}
	s := &server{}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req Request
		resp := Response{}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp.Err = err.Error()
		} else if err := s.handle(&req, &resp); err != nil {
			resp.Err = err.Error()
		}
		if err := enc.Encode(&resp); err != nil {
			return err
		}
	}
	return sc.Err()
}

type server struct {
	pki     *kvproxy.PKI
	manager migrationproxy.ProxyManager
	streams streams
}

func (s *server) handle(req *Request, resp *Response) error {
	switch req.Op {
	case "init":
		if len(req.PKI) > 0 {
			p, err := kvproxy.ImportPKI(req.PKI)
			if err != nil {
				return err
			}
			s.pki = p
		}
		m, err := kvproxy.NewManager(req.Bind, s.pki)
		if err != nil {
			return err
		}
		s.manager = m
	case "start-target":
		if err := s.manager.StartTargetListener(req.Key, req.Sockets); err != nil {
			return err
		}
		resp.Ports = s.manager.GetTargetListenerPorts(req.Key)
	case "start-source":
		if err := s.manager.StartSourceListener(req.Key, req.Addr, req.Ports, req.Dir); err != nil {
			return err
		}
		resp.Files = s.manager.GetSourceListenerFiles(req.Key)
	case "stop":
		s.manager.StopSourceListener(req.Key)
		s.manager.StopTargetListener(req.Key)
	case "usage":
		fds, err := kvproxy.OpenFDs()
		if err != nil {
			return err
		}
		resp.FDs, resp.Goroutines = fds, kvproxy.Goroutines()
	case "bytes":
		b, err := kvproxy.ProxyBytes(req.Key)
		if err != nil {
			return err
		}
		resp.Bytes = b
	case "dial":
		c, err := net.DialTimeout("tcp", req.Addr, 3*time.Second)
		if err != nil {
			return err
		}
		c.Close()
	case "tlsdial":
		return s.tlsDial(req)
	case "sink", "sinkwait", "send":
		return s.streams.handle(req, resp)
	default:
		return fmt.Errorf("unknown op %q", req.Op)
	}
	return nil
}

// tlsDial connects with a stranger's certificate; nil means the target let it in.
func (s *server) tlsDial(req *Request) error {
	if s.pki == nil {
		return fmt.Errorf("no PKI")
	}
	issuer := s.pki
	if req.Foreign {
		f, err := kvproxy.NewForeignPKI()
		if err != nil {
			return err
		}
		issuer = f
	}
	cert, err := issuer.Issue(req.ClientCN, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", req.Addr, issuer.ClientConfigWith(cert))
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}
