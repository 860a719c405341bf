package count

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/hist"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Event is the third way a Counter counts: any event's hits per key, by a hist trigger on it
// (ftctl hist's table, for the console's Top view).
const Event Method = "event"

// EventOptions say what NewEvent counts: the hits of SYSTEM:EVENT per key (Keys: FIELD[.MOD]
// texts, as ftctl hist --key takes them).
type EventOptions struct {
	System, Event string
	Keys          []string
}

// NewEvent prepares the count of an event's hits per key: the trigger checked against the
// event's format and the README's modifiers (*hist.Error, exit 2 for a command), the session
// made. Nothing is written.
func NewEvent(fs *tracefs.FS, o EventOptions) (*Counter, error) {
	top := fs.Top()
	dir := "events/" + o.System + "/" + o.Event
	bad := func(s string) bool { return s == "" || strings.ContainsAny(s, "/:\x00 ") || s == "." || s == ".." }
	if bad(o.System) || bad(o.Event) || !top.Has(dir+"/format") {
		return nil, fmt.Errorf("%w: no event %s:%s ('ftctl list events' lists them)", ErrMethod, o.System, o.Event)
	}
	ft := fs.DetectFeatures()
	if !top.Has(dir+"/hist") || !ft.HistTriggers {
		return nil, fmt.Errorf("%w: this kernel has no hist triggers (CONFIG_HIST_TRIGGERS)", tracefs.ErrUnavailable)
	}
	t, err := hist.Parse(o.Keys, nil, "", 0, "")
	if err != nil {
		return nil, err
	}
	format, err := top.EventFormat(o.System, o.Event)
	if err != nil {
		return nil, err
	}
	if err := t.Check(format, hist.KernelOf(ft.Hist)); err != nil {
		return nil, err
	}
	s, err := session.New(fs, session.NewID(os.Getpid()), session.Spec{})
	if err != nil {
		return nil, err
	}
	c := &Counter{fs: fs, s: s, event: &o, trigger: t.String(), hist: ft.Hist}
	c.Choice = Choice{Method: Event, Why: fmt.Sprintf("a hist trigger on %s:%s keyed by %s, counted in the kernel", o.System, o.Event, strings.Join(o.Keys, ","))}
	return c, nil
}

// eventCounts reads the event's table: the hits per key, the keys' texts joined by spaces (a
// pid shown as a program name or a syscall by its name keeps its number, as ftctl hist prints
// it).
func (c *Counter) eventCounts() (Counts, error) {
	t, err := readTable(c.s.Instance, c.event.System, c.event.Event)
	if err != nil {
		return nil, err
	}
	return KeyedCounts(t), nil
}

// KeyedCounts reads a hist table's hits per key: each key's text (with its number for
// .execname and .syscall), joined by spaces.
func KeyedCounts(t hist.Table) Counts {
	c := Counts{}
	for _, r := range t.Rows {
		var parts []string
		for _, k := range r.Keys {
			text := strings.ReplaceAll(k.Text, "\n", " ")
			if k.HasNum && (k.Mod == "execname" || k.Mod == "syscall") {
				text += " [" + strconv.FormatUint(k.Num, 10) + "]"
			}
			parts = append(parts, text)
		}
		n, _ := r.Value("hitcount")
		c[strings.Join(parts, " ")] += uint64(n)
	}
	return c
}
