package sim

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// Service simulates what a Kubernetes Service gives migranet's webhook replicas: one stable
// address in front of the replicas that are Ready. It stands in for the endpoints controller
// (an endpoint is listed only while its readiness probe passes, probed every ProbePeriod, as the
// kubelet's probe and status updates would) and for kube-proxy in iptables mode (each new TCP
// connection goes to one ready endpoint picked at random; a connection to an endpoint that died
// since the last probe fails, it is not retried elsewhere; with no ready endpoint connections are
// refused). TLS passes through untouched.
type Service struct {
	// ProbePeriod is how often endpoints' readiness is checked; 1 s when zero.
	ProbePeriod time.Duration

	listener  net.Listener
	mu        sync.Mutex
	endpoints map[string]*endpoint
	wg        sync.WaitGroup
	stop      chan struct{}
}

type endpoint struct {
	addr, readyURL string
	ready          bool
}

// StartService listens on a free loopback port and starts probing.
func StartService(probePeriod time.Duration) (*Service, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if probePeriod == 0 {
		probePeriod = time.Second
	}
	s := &Service{ProbePeriod: probePeriod, listener: l, endpoints: map[string]*endpoint{}, stop: make(chan struct{})}
	s.wg.Add(2)
	go s.accept()
	go s.probe()
	return s, nil
}

// Addr is the Service's host:port.
func (s *Service) Addr() string { return s.listener.Addr().String() }

// SetEndpoint adds or replaces the endpoint called name: traffic goes to addr once GET readyURL
// answers 200.
func (s *Service) SetEndpoint(name, addr, readyURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints[name] = &endpoint{addr: addr, readyURL: readyURL}
}

// Unready takes the endpoint out of rotation until its probe passes again, as the kubelet's
// report of a container's exit does.
func (s *Service) Unready(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.endpoints[name]; ok {
		e.ready = false
	}
}

// Ready lists the endpoints traffic goes to now.
func (s *Service) Ready() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, e := range s.endpoints {
		if e.ready {
			out = append(out, name)
		}
	}
	return out
}

// Close stops listening and probing; open connections run to their end.
func (s *Service) Close() {
	close(s.stop)
	s.listener.Close()
	s.wg.Wait()
}

func (s *Service) probe() {
	defer s.wg.Done()
	client := &http.Client{Timeout: s.ProbePeriod}
	ticker := time.NewTicker(s.ProbePeriod)
	defer ticker.Stop()
	for {
		s.mu.Lock()
		eps := make([]*endpoint, 0, len(s.endpoints))
		urls := make([]string, 0, len(s.endpoints))
		for _, e := range s.endpoints {
			eps, urls = append(eps, e), append(urls, e.readyURL)
		}
		s.mu.Unlock()
		results := make([]bool, len(eps))
		for i, u := range urls {
			if resp, err := client.Get(u); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				results[i] = resp.StatusCode == http.StatusOK
			}
		}
		s.mu.Lock()
		for i, e := range eps {
			e.ready = results[i]
		}
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-ticker.C:
		}
	}
}

func (s *Service) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		go s.forward(conn)
	}
}

// forward connects conn to a random ready endpoint; with none, or when the endpoint does not
// answer, it resets the connection, as kube-proxy's REJECT rule or a dead pod IP would.
func (s *Service) forward(conn net.Conn) {
	defer conn.Close()
	reset := func() {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	s.mu.Lock()
	var ready []string
	for _, e := range s.endpoints {
		if e.ready {
			ready = append(ready, e.addr)
		}
	}
	s.mu.Unlock()
	if len(ready) == 0 {
		reset()
		return
	}
	backend, err := net.DialTimeout("tcp", ready[rand.IntN(len(ready))], 5*time.Second)
	if err != nil {
		reset()
		return
	}
	defer backend.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(backend, conn); cancel() }()
	go func() { _, _ = io.Copy(conn, backend); cancel() }()
	<-ctx.Done()
}
