package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// drain is the manager's graceful shutdown. On SIGTERM (the kubelet stopping the pod) the replica
// first turns unready, so that the Service stops sending it new webhook connections, and keeps
// serving for a delay before it stops: the endpoint's removal reaches kube-proxy (and the API
// server's connection pool) a moment after SIGTERM, and a replica that closed its listener at once
// would fail the admissions sent in that moment — which, for failurePolicy Ignore, admits them
// unchecked, and for Fail refuses them. A second signal exits at once.
type drain struct {
	delay    time.Duration
	draining atomic.Bool
}

// context returns a context that ends delay after the first SIGTERM or SIGINT.
func (d *drain) context() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sigs
		d.draining.Store(true)
		select {
		case <-time.After(d.delay):
		case <-sigs:
			os.Exit(1)
		}
		cancel()
		<-sigs
		os.Exit(1)
	}()
	return ctx
}

// check is a readiness check that fails once shutdown has begun.
func (d *drain) check(*http.Request) error {
	if d.draining.Load() {
		return errors.New("shutting down: draining webhook traffic before stopping")
	}
	return nil
}
