package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	ephemeraldiskutils "kubevirt.io/kubevirt/pkg/ephemeral-disk-utils"

	"github.com/migranet/migranet/vendor-patches/harness/kvproxy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "labproxy:", err)
		os.Exit(1)
	}
}

func run() error {
	var ca, serverCert, serverKey, clientCert, clientKey, metricsAddr, iface string
	flag.StringVar(&ca, "ca", "", "KubeVirt CA bundle (PEM), the kubevirt-ca ConfigMap's ca-bundle")
	flag.StringVar(&serverCert, "server-cert", "", "virt-handler's server certificate (PEM)")
	flag.StringVar(&serverKey, "server-key", "", "its key (PEM)")
	flag.StringVar(&clientCert, "client-cert", "", "virt-handler's client certificate (PEM)")
	flag.StringVar(&clientKey, "client-key", "", "its key (PEM)")
	flag.StringVar(&metricsAddr, "metrics", ":8443", "where /metrics is served over HTTPS")
	flag.StringVar(&iface, "interface", "migration0", "the interface whose address the target listeners bind")
	flag.Parse()
	var pem [5][]byte
	for i, f := range []string{ca, serverCert, serverKey, clientCert, clientKey} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		pem[i] = b
	}
	pki, err := kvproxy.PKIFromPEM(pem[0], pem[1], pem[2], pem[3], pem[4])
	if err != nil {
		return err
	}
	bind, err := migrationIP(iface)
	if err != nil {
		return err
	}
	// virt-handler hands each source socket to the qemu user (107); the lab's "QEMU" is the
	// stand-in, running as root on a machine that has no qemu user.
	ephemeraldiskutils.MockDefaultOwnershipManager()
	if err := kvproxy.RegisterMetrics(); err != nil {
		return err
	}
	m, setDisableTLS, err := kvproxy.NewSwitchableManager(bind, pki)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", metricsAddr)
	if err != nil {
		return fmt.Errorf("metrics endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pki.ServerCertificate()}}}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "labproxy: metrics endpoint:", err)
		}
	}()
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(ready{Bind: bind, Metrics: ln.Addr().String(), PID: os.Getpid()}); err != nil {
		return err
	}
	return serve(os.Stdin, enc, &proxy{manager: m, setDisableTLS: setDisableTLS})
}

// ready is the first line out: the address the target listeners bind, where the
// metrics are served, and the process id.
type ready struct {
	Bind    string `json:"bind"`
	Metrics string `json:"metrics"`
	PID     int    `json:"pid"`
}

// migrationIP is the first global unicast address of iface, as virt-handler's
// FindMigrationIP picks migration0's address. Unlike it, no fallback: the lab
// starts a proxy only where migration0 is attached.
func migrationIP(iface string) (string, error) {
	ifc, err := net.InterfaceByName(iface)
	if err != nil {
		return "", fmt.Errorf("no %s in this network namespace: %w", iface, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", fmt.Errorf("%s: %w", iface, err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no IP found on %s", iface)
}
