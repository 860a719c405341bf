package stream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftctl/ftctl/tracefs"
)

func TestSummary(t *testing.T) {
	// The counters of the overrun capture's instance (read before trace_pipe), taken as "after".
	var after []tracefs.CPUStats
	for cpu, name := range []string{"overrun.cpu0.stats", "overrun.cpu1.stats"} {
		b, err := os.ReadFile(filepath.Join("testdata", "6.12", name))
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, tracefs.ParseCPUStats(cpu, string(b)))
	}
	before := []tracefs.CPUStats{{CPU: 0}, {CPU: 1}}
	if after[0].Overrun+after[1].Overrun == 0 {
		t.Fatal("the overrun capture shows no overrun")
	}
	s := NewSummary(before)
	in, _ := os.ReadFile(filepath.Join("testdata", "6.12", "overrun.pipe"))
	var d Decoder
	emit := func(ev *Event) error { s.Count(ev, ev.Kind != KindLost); return nil }
	d.Feed(append(in, "CPU:0 [LOST EVENTS]\n"...), emit)
	d.Flush(emit)
	s.Finish(after, 1.5, "eof")
	if !s.Lost() || s.LostReported != 1849 || s.LostUncounted != 1 || *s.Overrun != after[0].Overrun+after[1].Overrun {
		t.Errorf("%+v", s)
	}
	if s.Lines != s.Events || s.Shown != s.Events-2 {
		t.Errorf("lines %d events %d shown %d", s.Lines, s.Events, s.Shown)
	}
	text := s.String()
	for _, want := range []string{"LOST:", "overwritten (overrun)", "reported 1849 (+1 uncounted)", "cpu1 "} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q: %s", want, text)
		}
	}
	js, _ := json.Marshal(s)
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil || back["event"] != "summary" || back["lost_reported"] != 1849.0 {
		t.Errorf("%s %v", js, err)
	}

	// Without readable counters: overruns unknown, said so.
	s = NewSummary(nil)
	s.Finish(nil, 0, "interrupted")
	if s.Overrun != nil || s.Lost() || !strings.Contains(s.String(), "overruns unknown") {
		t.Errorf("%+v %s", s, s)
	}
	// Nothing lost.
	s = NewSummary(before)
	s.Finish(before, 0, "count")
	if s.Lost() || !strings.Contains(s.String(), "nothing lost") {
		t.Errorf("%s", s)
	}
}
