package certs

import (
	"crypto/x509"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricExpiry is the name of the gauge of the serving certificate's expiry.
const MetricExpiry = "migranet_webhook_certificate_expiry_timestamp_seconds"

// ExpiryCollector exports when the serving certificate this replica serves expires (its NotAfter,
// in Unix seconds); nothing while none is loaded. Register it with the manager's registry.
func (r *Rotator) ExpiryCollector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: MetricExpiry,
		Help: "Unix time at which the webhook serving certificate this replica serves expires (NotAfter); 0 while none is loaded.",
	}, r.expiry)
}

func (r *Rotator) expiry() float64 {
	c := r.serving.Load()
	if c == nil || len(c.Certificate) == 0 {
		return 0
	}
	leaf := c.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return 0
		}
	}
	return float64(leaf.NotAfter.Unix())
}
