package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// clientCommand is the argument that makes the bench binary the admission load client:
// bench admission-client <CA file> <url> <bodies file> [<url> <bodies file>...], one pair per case.
const clientCommand = "admission-client"

// blockResult is what the client prints, as one JSON line, for each block it ran.
type blockResult struct {
	Elapsed time.Duration
	Lat     []time.Duration // one per review, in completion order
}

// admissionClient serves the bench: for each line "<case> <n>" on its standard input it sends n
// AdmissionReviews of that case, cycling through its bodies (a JSON list), from admWorkers
// keep-alive HTTPS workers, checks that each is allowed, and prints the block's blockResult. The
// connections live as long as the client, so no block pays a TLS handshake.
func admissionClient(args []string) error {
	if len(args) < 3 || len(args)%2 != 1 {
		return fmt.Errorf("usage: %s <CA file> <url> <bodies file> [<url> <bodies file>...]", clientCommand)
	}
	caPEM, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s holds no CA certificate", args[0])
	}
	type load struct {
		url    string
		bodies [][]byte
	}
	var cases []load
	for i := 1; i < len(args); i += 2 {
		raw, err := os.ReadFile(args[i+1])
		if err != nil {
			return err
		}
		l := load{url: args[i]}
		if err := json.Unmarshal(raw, &l.bodies); err != nil || len(l.bodies) == 0 {
			return fmt.Errorf("%s holds no bodies: %v", args[i+1], err)
		}
		cases = append(cases, l)
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: admWorkers,
	}, Timeout: 10 * time.Second}
	in, out := bufio.NewScanner(os.Stdin), json.NewEncoder(os.Stdout)
	for in.Scan() {
		k, n, err := parseBlock(in.Text(), len(cases))
		if err != nil {
			return err
		}
		res, err := runBlock(hc, cases[k].url, cases[k].bodies, n)
		if err != nil {
			return err
		}
		if err := out.Encode(res); err != nil {
			return err
		}
	}
	return in.Err()
}

// parseBlock reads "<case> <n>".
func parseBlock(line string, cases int) (int, int, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("block %q: want \"<case> <n>\"", line)
	}
	k, err1 := strconv.Atoi(f[0])
	n, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || k < 0 || k >= cases || n <= 0 {
		return 0, 0, fmt.Errorf("block %q: want a case below %d and a positive count", line, cases)
	}
	return k, n, nil
}

// runBlock sends n reviews of bodies to url from admWorkers workers.
func runBlock(hc *http.Client, url string, bodies [][]byte, n int) (blockResult, error) {
	lat := make([]time.Duration, n)
	start := time.Now()
	err := parallel(n, admWorkers, func(i int) error {
		t0 := time.Now()
		resp, err := hc.Post(url, "application/json", bytes.NewReader(bodies[i%len(bodies)]))
		if err != nil {
			return err
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(out, &review); err != nil || review.Response == nil || !review.Response.Allowed {
			return fmt.Errorf("%s: unexpected answer %s", url, out)
		}
		lat[i] = time.Since(t0)
		return nil
	})
	return blockResult{Elapsed: time.Since(start), Lat: lat}, err
}
