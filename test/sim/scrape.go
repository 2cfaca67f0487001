package sim

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/migranet/migranet/test/nodenet"
)

// ScrapeProxy reads the /metrics page a lab migration proxy serves in sandbox ns (HTTPS on
// MigrationProxyPort, its certificate not verified: the API server's pod proxy does not verify a
// pod's either), as Prometheus or the API server's pods/proxy reach virt-handler's.
func ScrapeProxy(ctx context.Context, ns nodenet.NS) (string, error) {
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a lab pod's self-issued certificate, as the API server's pod proxy skips it
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return nodenet.DialIn(ctx, ns, netip.Addr{}, addr, 5*time.Second)
		},
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", MigrationProxyPort), nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics in %s: %s", ns, resp.Status)
	}
	return string(b), nil
}
