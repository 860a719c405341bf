package tracefs

import (
	"bytes"
	"context"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// What the stream's binary reader needs from the kernel besides the ring buffer's pages: the
// options and clock that decide how trace_pipe would print, the enabled events, pid → comm and
// tgid tables, and the kernel's symbols.

// KallsymsPath is where the kernel lists its symbols.
const KallsymsPath = "/proc/kallsyms"

// EventName is SYSTEM:EVENT.
type EventName struct{ System, Event string }

// EnabledEvents lists set_event: the events enabled in the trace array.
func (i *Instance) EnabledEvents() ([]EventName, error) {
	b, err := i.ReadFile("set_event")
	if err != nil {
		return nil, err
	}
	return ParseEventList(string(b)), nil
}

// EventFormatByID finds the format of the event with this type ID among the trace array's
// enabled events and the dynamic events (an event enabled after a reader started); nil when
// none has it.
func (i *Instance) EventFormatByID(id int) *Format {
	names, _ := i.EnabledEvents()
	if b, err := i.fs.Top().ReadFile("dynamic_events"); err == nil {
		for _, p := range ParseProbeList(string(b)) {
			if p.Group != "" && p.Event != "" {
				names = append(names, EventName{p.Group, p.Event})
			}
		}
	}
	want := strconv.Itoa(id)
	for _, n := range names {
		b, err := i.ReadFile(path.Join("events", n.System, n.Event, "id"))
		if err != nil || strings.TrimSpace(string(b)) != want {
			continue
		}
		if f, err := i.EventFormat(n.System, n.Event); err == nil {
			return f
		}
	}
	return nil
}

// DynamicEvents reads dynamic_events: each dynamic event's kind ("p", "r", "e" for an eprobe,
// "s" synthetic, "f" fprobe, "t" tracepoint probe, "u" user event, and "up", "ur" for a uprobe
// and a uretprobe, which dynamic_events lists as "p"/"r" with a PATH:0xOFFSET place) by name;
// empty without the file (before 5.0, or CONFIG_DYNAMIC_EVENTS off).
func (f *FS) DynamicEvents() map[EventName]string {
	m := map[EventName]string{}
	b, err := f.Top().ReadFile("dynamic_events")
	if err != nil {
		return m
	}
	for _, p := range ParseProbeList(string(b)) {
		if p.Group != "" && p.Event != "" {
			kind := strings.TrimRight(p.Type, "0123456789")
			if kind == "p" || kind == "r" {
				// trace_uprobe.c prints "%c:%s/%s %s:0x%0*lx": the place has a '/' and a ':'
				if f := strings.Fields(p.Definition); len(f) > 1 && strings.Contains(f[1], "/") && strings.Contains(f[1], ":") {
					kind = "u" + kind
				}
			}
			m[EventName{p.Group, p.Event}] = kind
		}
	}
	return m
}

// Option reads options/NAME: its value, and whether this kernel has the option.
func (i *Instance) Option(name string) (on, ok bool) {
	b, err := i.ReadFile("options/" + name)
	if err != nil || len(b) == 0 {
		return false, false
	}
	return b[0] == '1', true
}

// TraceClock is the trace array's clock, the bracketed choice of trace_clock.
func (i *Instance) TraceClock() (string, error) {
	b, err := i.ReadFile("trace_clock")
	if err != nil {
		return "", err
	}
	return CurrentChoice(string(b)), nil
}

// Tracer is the trace array's current_tracer.
func (i *Instance) Tracer() (string, error) {
	b, err := i.ReadFile("current_tracer")
	return strings.TrimSpace(string(b)), err
}

// CurrentChoice is the bracketed choice of a file like trace_clock ("local [global] counter").
func CurrentChoice(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

// SavedCmdlines reads the kernel's pid → comm table (top level only: instances have none).
func (f *FS) SavedCmdlines() (map[int][]byte, error) { return f.pidTable("saved_cmdlines") }

// SavedTgids reads the kernel's pid → tgid table (filled with the record-tgid option).
func (f *FS) SavedTgids() (map[int][]byte, error) { return f.pidTable("saved_tgids") }

func (f *FS) pidTable(file string) (map[int][]byte, error) {
	b, err := f.Top().ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParsePidLines(b), nil
}

// ParsePidLines reads "PID VALUE" lines (saved_cmdlines, saved_tgids). A comm may hold spaces:
// the value is everything after the first. The values are slices of b. It allocates the map
// and little else: under a forking workload saved_cmdlines holds thousands of lines (6,552 in
// the VM, saved_cmdlines_size), and the stream reads it again for new pids; a copy of each
// value and a string of each pid made that the largest cost of ftctl's decoding in an in-VM
// profile (6.12, vm/bench-hot.sh).
func ParsePidLines(b []byte) map[int][]byte {
	m := make(map[int][]byte, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			continue
		}
		pid, ok := parsePid(line[:sp])
		if !ok {
			continue
		}
		m[pid] = line[sp+1 : len(line) : len(line)]
	}
	return m
}

// parsePid parses a pid as strconv.Atoi does, without a string for the usual all-digits case.
func parsePid(b []byte) (int, bool) {
	if len(b) > 0 && len(b) < 10 {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				n = -1
				break
			}
			n = n*10 + int(c-'0')
		}
		if n >= 0 {
			return n, true
		}
	}
	n, err := strconv.Atoi(string(b))
	return n, err == nil
}

// procReadSize bounds each read of a /proc file: the kernel formats all it is asked for
// before the read returns, and a process exiting (Ctrl-C) waits for that read to end; 8 MiB of
// kallsyms at once took 0.4 s under emulation.
const procReadSize = 64 << 10

// kallsymsExpect is the room first made for kallsyms (4-8 MiB on the VM kernels).
const kallsymsExpect = 8 << 20

// Kallsyms reads the kernel's symbol table (/proc/kallsyms, or the file FS.Kallsyms names)
// into memory mapped outside the Go heap, populated in one go: the file is 4-8 MiB, and a heap
// buffer of that size, faulted in page by page and then swept by the collector, cost about as
// much CPU as the kernel's formatting of the file under emulation (an in-VM profile). The
// memory is never unmapped: the table lives as long as the reader that asked for it. The end
// of ctx stops the reading between two reads of procReadSize.
func (f *FS) Kallsyms(ctx context.Context) ([]byte, error) {
	name := f.KallsymsFile
	if name == "" {
		name = KallsymsPath
	}
	fd, err := os.Open(name)
	if err != nil {
		return nil, f.opError("open", name, "", unwrapPath(err))
	}
	defer fd.Close()
	alloc := func(n int) []byte {
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return make([]byte, n)
		}
		return b
	}
	b := alloc(kallsymsExpect)
	n := 0
	for {
		if n == len(b) { // larger than expected: twice the room, and copy
			bigger := alloc(2 * len(b))
			copy(bigger, b)
			b = bigger
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// raw reads (rawRead): each returns at most a page of lines the kernel formats on the
		// way. Made the usual way, each is long enough under emulation for Go's sysmon to take
		// the processor from the system call, and the ~1,600 of kallsyms kept it polling: in
		// the VM (6.1) ftctl's read cost far more than `cat /proc/kallsyms`'s, and raw about as
		// much (BENCHMARKS.md, "Record's fixed costs measured apart")
		m, err := rawRead(int(fd.Fd()), b[n:min(n+procReadSize, len(b))])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, f.opError("read", name, "", unwrapPath(err))
		}
		if m == 0 {
			return b[:n], nil
		}
		n += m
	}
}

// OwnThread says whether tid is a thread of this process (each Go thread has its own tid): a
// reader of the trace drops the events its own threads cause.
func OwnThread(tid int) bool {
	if tid <= 0 {
		return false
	}
	var st unix.Stat_t
	return unix.Stat("/proc/self/task/"+strconv.Itoa(tid), &st) == nil
}

// OwnThreads lists the threads of this process.
func OwnThreads() []int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}
