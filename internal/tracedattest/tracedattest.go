// Package tracedattest rewrites a recording (a trace.dat of ftctl's, version 6, one buffer) as
// trace-cmd record writes one with instances' buffers (trace-cmd record -B NAME), in version 6
// or 7 and each of trace-cmd's compressions, through internal/fixture's writer: for the tests
// of the packages that read such files (stream, tui, cmd).
package tracedattest

import (
	"bytes"
	"io"
	"testing"

	"github.com/ftctl/ftctl/internal/fixture"
	"github.com/ftctl/ftctl/tracedat"
)

// Buffer is one buffer of the file written: its name ("" the top level's, which comes first)
// and which of the source's CPUs' pages it holds (the others hold none).
type Buffer struct {
	Name string
	CPUs []int
}

// TraceCmd writes src's header and the buffers given as trace-cmd would: version 6 or 7,
// compressed with comp ("none", "zstd", "zlib") in version 7.
func TraceCmd(t testing.TB, src []byte, version int, comp string, bufs ...Buffer) []byte {
	t.Helper()
	f, err := tracedat.Read(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	d := fixture.TraceDat{Version: version, Compression: comp, PageSize: f.PageSize, HeaderPage: f.HeaderPage,
		HeaderEvent: f.HeaderEvent, Ftrace: f.Ftrace, Kallsyms: f.Kallsyms, Printk: f.Printk, Cmdlines: f.Cmdlines}
	for _, s := range f.Systems {
		d.Systems = append(d.Systems, fixture.TraceDatSystem{Name: s.Name, Formats: s.Formats})
	}
	for _, o := range f.Options {
		d.Options = append(d.Options, fixture.TraceDatOption{ID: o.ID, Data: o.Data})
	}
	for _, b := range bufs {
		buf := fixture.TraceDatBuffer{Name: b.Name, CPUs: make([][]byte, f.CPUs)}
		for _, cpu := range b.CPUs {
			if buf.CPUs[cpu], err = io.ReadAll(f.Pages(cpu)); err != nil {
				t.Fatal(err)
			}
		}
		d.Buffers = append(d.Buffers, buf)
	}
	b, err := d.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
