package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracedat"
	"github.com/ftctl/ftctl/tracefs"
)

// fixtureTraceDat assembles a trace.dat from a kernel's captures in testdata (formats,
// kallsyms, saved_cmdlines, both CPUs' trace_pipe_raw pages) as ftctl record does.
func fixtureTraceDat(t testing.TB, kernel string) []byte {
	t.Helper()
	dir := filepath.Join("testdata", kernel)
	files := gzTar(t, filepath.Join(dir, "formats.tar.gz"))
	h := &tracedat.Header{PageSize: 4096, LongSize: 8, HeaderPage: []byte(files["events/header_page"]),
		HeaderEvent: []byte(files["events/header_event"]), Kallsyms: gunzip(t, filepath.Join(dir, "tp.kallsyms.gz")),
		CPUs: 2, Options: []tracedat.Option{{ID: tracedat.OptionTraceClock, Data: []byte("[local] global\n\x00")}}}
	var err error
	if h.Cmdlines, err = os.ReadFile(filepath.Join(dir, "tp.saved_cmdlines")); err != nil {
		t.Fatal(err)
	}
	bySystem := map[string][][]byte{}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		parts := strings.Split(name, "/")
		if len(parts) != 4 || parts[3] != "format" {
			continue
		}
		if parts[1] == "ftrace" {
			h.Ftrace = append(h.Ftrace, []byte(files[name]))
			continue
		}
		if bySystem[parts[1]] == nil {
			h.Systems = append(h.Systems, tracedat.System{Name: parts[1]})
		}
		bySystem[parts[1]] = append(bySystem[parts[1]], []byte(files[name]))
	}
	for i := range h.Systems {
		h.Systems[i].Formats = bySystem[h.Systems[i].Name]
	}
	var cpus []tracedat.CPUSource
	for cpu := 0; cpu < 2; cpu++ {
		raw := gunzip(t, filepath.Join(dir, "tp.cpu"+string(rune('0'+cpu))+".raw.gz"))
		cpus = append(cpus, tracedat.CPUSource{R: bytes.NewReader(raw), Size: int64(len(raw))})
	}
	var b bytes.Buffer
	if err := tracedat.Write(&b, h, cpus); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A recording read back from its trace.dat gives the events the binary reader makes of the
// same pages read live, in the same order.
func TestReadFileMatchesLivePages(t *testing.T) {
	for _, kernel := range []string{"6.1", "6.12"} {
		t.Run(kernel, func(t *testing.T) {
			b := fixtureTraceDat(t, kernel)
			if out := os.Getenv("FTCTL_TRACEDAT_OUT"); out != "" { // to try trace-cmd report on it
				os.WriteFile(filepath.Join(out, kernel+".dat"), b, 0o644)
			}
			f, err := tracedat.Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			info, err := ReadFile(f, FileOptions{}, func(ev *Event) error {
				got = append(got, string(AppendJSON(nil, ev, false)))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			syms, err := ParseKallsyms(f.Kallsyms)
			if err != nil {
				t.Fatal(err)
			}
			d := &BinaryDecoder{Layout: tracefsDefault(), Symbols: syms, PrintParent: true}
			comms := parsePids(f.Cmdlines)
			d.Comm = func(pid int) []byte { return comms[pid] }
			for _, fm := range kernelFormats(t, kernel) {
				d.Add(fm)
			}
			var want []string
			if err := d.Feed(capturedPages(t, kernel), func(ev *Event) error {
				want = append(want, string(AppendJSON(nil, ev, false)))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(got) < 100 {
				t.Fatalf("%d events from the file, %d from the pages", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("event %d:\n file %s\npages %s", i, got[i], want[i])
				}
			}
			if info.CPUs != 2 || info.Clock != "local" || info.Partial != 0 {
				t.Errorf("info %+v", info)
			}
			// one CPU only
			n := 0
			if _, err := ReadFile(f, FileOptions{CPU: 1, HasCPU: true}, func(ev *Event) error {
				if ev.CPU != 1 {
					t.Fatalf("cpu %d event with --cpu 1", ev.CPU)
				}
				n++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if n == 0 || n >= len(got) {
				t.Errorf("%d events of cpu 1 of %d", n, len(got))
			}
			if _, err := ReadFile(f, FileOptions{CPU: 2, HasCPU: true}, func(*Event) error { return nil }); err == nil {
				t.Error("--cpu 2 of a 2-CPU recording: no error")
			}
		})
	}
}

func tracefsDefault() tracefs.PageLayout { return tracefs.DefaultPageLayout }

func parsePids(b []byte) map[int][]byte { return tracefs.ParsePidLines(b) }
