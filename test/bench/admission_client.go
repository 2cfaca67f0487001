package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// clientCommand is the argument that makes the bench binary the admission load client:
// bench admission-client <url> <CA file> <bodies file>.
const clientCommand = "admission-client"

// clientResult is what the client prints, as JSON, on success.
type clientResult struct {
	RPS      float64
	P50, P99 time.Duration
}

// admissionClient sends admRequests AdmissionReviews, cycling through the bodies (a JSON list)
// from admWorkers keep-alive HTTPS workers, checks that each is allowed, and prints the
// throughput and latency.
func admissionClient(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: %s <url> <CA file> <bodies file>", clientCommand)
	}
	url := args[0]
	caPEM, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(args[2])
	if err != nil {
		return err
	}
	var bodies [][]byte
	if err := json.Unmarshal(raw, &bodies); err != nil || len(bodies) == 0 {
		return fmt.Errorf("%s holds no bodies: %v", args[2], err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s holds no CA certificate", args[1])
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: admWorkers,
	}, Timeout: 10 * time.Second}
	lat := make([]time.Duration, admRequests)
	start := time.Now()
	err = parallel(admRequests, admWorkers, func(i int) error {
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
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	slices.Sort(lat)
	return json.NewEncoder(os.Stdout).Encode(clientResult{RPS: float64(admRequests) / elapsed.Seconds(),
		P50: lat[len(lat)/2], P99: lat[len(lat)*99/100]})
}
