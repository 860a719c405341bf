package tui

import (
	"context"
	"fmt"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/probes"
	"github.com/ftctl/ftctl/tracefs"
)

// ReadOnlyBackend is the console's Backend over a tracefs mounted read-only (a container's
// read-only bind mount, most often): what reads goes to the backend it wraps (the kernel's: the
// status, the function lists and index, the probes), and each change is refused before the
// kernel is asked, with why, where the view shows its errors. The status bar says read-only.
// The stream is the source's (NewPipeSource), which only reads.
type ReadOnlyBackend struct {
	Backend
	// Why is the reason, shown with every refusal: "tracefs is mounted read-only (ro,nosuid)".
	Why string
}

// ReadOnlyError is a change the read-only console refused; it is tracefs.ErrReadOnly.
type ReadOnlyError struct{ Why string }

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("%s: the console is read-only (stream and inspection only; nothing was written)", e.Why)
}

// Is makes a ReadOnlyError tracefs.ErrReadOnly, as the kernel's EROFS is.
func (e *ReadOnlyError) Is(target error) bool { return target == tracefs.ErrReadOnly }

func (b *ReadOnlyBackend) refused() error { return &ReadOnlyError{Why: b.Why} }

// Status implements Backend: the kernel's, the tracing directory marked read-only.
func (b *ReadOnlyBackend) Status() (Status, error) {
	st, err := b.Backend.Status()
	st.Tracefs += " (read-only)"
	return st, err
}

// Apply implements Backend: refused.
func (b *ReadOnlyBackend) Apply(context.Context, []filters.Change) ([]filters.Result, error) {
	return nil, b.refused()
}

// SetTracer implements Backend: refused.
func (b *ReadOnlyBackend) SetTracer(string) error { return b.refused() }

// SetTracing implements Backend: refused.
func (b *ReadOnlyBackend) SetTracing(bool) error { return b.refused() }

// AddProbe implements Backend: refused.
func (b *ReadOnlyBackend) AddProbe(context.Context, *probes.Definition) (*probes.Added, error) {
	return nil, b.refused()
}

// EnableProbe implements Backend: refused.
func (b *ReadOnlyBackend) EnableProbe(string, string, bool) error { return b.refused() }

// RemoveProbe implements Backend: refused.
func (b *ReadOnlyBackend) RemoveProbe(context.Context, string, string) error { return b.refused() }

// StartCount implements Backend: refused (a count is a session of its own: an instance and
// probes written).
func (b *ReadOnlyBackend) StartCount(context.Context, CountRequest) (CountInfo, error) {
	return CountInfo{}, b.refused()
}

// StartGraph implements Backend: refused (a graph is a function_graph session of its own).
func (b *ReadOnlyBackend) StartGraph(context.Context, GraphRequest) (GraphInfo, *GraphFeed, error) {
	return GraphInfo{}, nil, b.refused()
}
