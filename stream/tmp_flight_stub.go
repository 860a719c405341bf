package stream

import (
	"context"
	"errors"

	"github.com/ftctl/ftctl/tracefs"
)

// Temporary stand-ins until the dump machinery lands (h-dump).

type DumpStats struct {
	Events, Lost, Bytes int64
	Pages               int
	Snapshot            bool
	Seconds             float64
}

func SaveHeader(in *tracefs.Instance, path string) error { return errors.New("not yet") }
func Dump(ctx context.Context, in *tracefs.Instance, header, out string) (*DumpStats, error) {
	return nil, errors.New("not yet")
}
func PrepareSnapshot(in *tracefs.Instance) error { return errors.New("not yet") }
func FreeSnapshot(in *tracefs.Instance) error    { return errors.New("not yet") }
