package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// Handler serves the agent's read-only endpoints: /metrics (Prometheus and OpenMetrics text),
// /healthz (the process answers) and /readyz (the profile is applied and the last check could
// read the kernel; else 503 and why). Only GET and HEAD; nothing changes the kernel.
func (a *Agent) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(a), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := a.Ready(); !ok {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	return mux
}

// Listen opens the address the agent serves on, and checks the web configuration file (TLS,
// basic auth: the Prometheus exporter toolkit's format) before anything is served.
func Listen(addr, webConfig string) (net.Listener, error) {
	if webConfig != "" {
		if err := web.Validate(webConfig); err != nil {
			return nil, fmt.Errorf("web config %s: %w", webConfig, err)
		}
	}
	return net.Listen("tcp", addr)
}

// Serve serves the agent's endpoints on l until ctx ends, through the exporter toolkit (TLS and
// basic auth from webConfig, when given).
func (a *Agent) Serve(ctx context.Context, l net.Listener, webConfig string, log *slog.Logger) error {
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	flags := &web.FlagConfig{WebListenAddresses: &[]string{l.Addr().String()}, WebConfigFile: &webConfig, WebSystemdSocket: new(bool)}
	done := make(chan error, 1)
	go func() { done <- web.Serve(l, srv, flags, log) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			return serr
		}
		return err
	}
}
