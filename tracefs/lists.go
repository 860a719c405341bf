package tracefs

import (
	"bufio"
	"strconv"
	"strings"
)

// FunctionList summarises the contents of set_ftrace_filter or set_ftrace_notrace
// (kernel/trace/ftrace.c t_show, t_mod_show, ftrace_func_mapper show):
//
//	#### all functions enabled ####     (empty filter)
//	#### no functions disabled ####     (empty notrace)
//	vfs_read
//	e1000_clean [e1000]                 (a module's function)
//	*:mod:nfsd                          (a :mod: pattern cached until the module loads)
//	do_exit:traceoff:unlimited          (a function command; count=N when counted)
type FunctionList struct {
	Empty          bool     `json:"empty"`           // no function listed (filter: every function traced)
	Functions      int      `json:"functions"`       // function records listed
	Names          []string `json:"-"`               // their lines: "name" or "name [module]"
	Commands       []string `json:"commands"`        // function commands (func:traceoff...)
	PendingModules []string `json:"pending_modules"` // cached :mod: patterns
}

// ParseFunctionList parses the text of set_ftrace_filter / set_ftrace_notrace.
func ParseFunctionList(text string) FunctionList {
	l := FunctionList{Commands: []string{}, PendingModules: []string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "", strings.HasPrefix(line, "#"):
		case strings.Contains(line, ":mod:"):
			l.PendingModules = append(l.PendingModules, line)
		case strings.Contains(strings.Fields(line)[0], ":"):
			l.Commands = append(l.Commands, line)
		default:
			l.Functions++
			l.Names = append(l.Names, line)
		}
	}
	// A filter holding only cached :mod: patterns is empty in the kernel: every function is traced.
	l.Empty = l.Functions == 0
	return l
}

// ProbeListEntry is one line of kprobe_events as the kernel lists it, split just enough to say
// whose it is: "p:kprobes/myopen do_sys_openat2 dfd=%di" or "r8:ftctl/ret vfs_read ...".
// The full grammar lives in probes/.
type ProbeListEntry struct {
	Type       string `json:"type"` // "p", "r", "r8", ...
	Group      string `json:"group"`
	Event      string `json:"event"`
	Definition string `json:"definition"`
}

// ParseProbeList parses kprobe_events (or dynamic_events) text.
func ParseProbeList(text string) []ProbeListEntry {
	var out []ProbeListEntry
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, _, _ := strings.Cut(line, " ")
		typ, name, ok := strings.Cut(head, ":")
		if !ok {
			continue
		}
		group, event, ok := strings.Cut(name, "/")
		if !ok {
			group, event, _ = strings.Cut(name, ".")
		}
		out = append(out, ProbeListEntry{Type: typ, Group: group, Event: event, Definition: line})
	}
	return out
}

// KprobesAndUprobes lists the probes of kprobe_events and uprobe_events, not the other kinds
// dynamic_events holds (probes.Manager.List lists every kind, and more about each). A kernel
// may lack either file; the error, kprobe_events', comes only when neither can be read.
func (f *FS) KprobesAndUprobes() ([]ProbeListEntry, error) {
	top := f.Top()
	kb, kerr := top.ReadFile("kprobe_events")
	ub, uerr := top.ReadFile("uprobe_events")
	if kerr != nil && uerr != nil {
		return nil, kerr
	}
	return ParseProbeList(string(kb) + "\n" + string(ub)), nil
}

// OwnedGroup says whether a probe group belongs to ftctl: "ftctl" (probe add) or a session's
// "ftctl_PID_NONCE" ("ftctl_PID" before November 2026). session.OwnedGroup is the rule; this
// copy serves tracefs.Status and probes.Manager.List until they take it from there.
func OwnedGroup(group string) bool {
	if group == "ftctl" {
		return true
	}
	rest, ok := strings.CutPrefix(group, "ftctl_")
	if !ok || rest == "" {
		return false
	}
	pid, nonce, hasNonce := strings.Cut(rest, "_")
	if hasNonce && (len(nonce) != 8 || strings.Trim(nonce, "0123456789abcdef") != "") {
		return false
	}
	_, err := strconv.ParseUint(pid, 10, 32)
	return err == nil
}

// BufferSize parses buffer_size_kb / buffer_total_size_kb: "1408", or "7 (expanded: 1408)"
// while the ring buffer still has its boot-time minimal size, or "X" when the per-CPU sizes
// differ. kb is the size tracing will use; allocated is false in the "expanded" case.
func BufferSize(s string) (kb int, allocated bool, ok bool) {
	s = strings.TrimSpace(s)
	if _, after, found := strings.Cut(s, "(expanded:"); found {
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(after), ")")))
		return n, false, err == nil
	}
	n, err := strconv.Atoi(s)
	return n, true, err == nil
}

// CPUStats is per_cpu/cpuN/stats (kernel/trace/trace.c tracing_stats_read).
type CPUStats struct {
	CPU           int   `json:"cpu"`
	Entries       int64 `json:"entries"`
	Overrun       int64 `json:"overrun"`
	CommitOverrun int64 `json:"commit_overrun"`
	DroppedEvents int64 `json:"dropped_events"`
	ReadEvents    int64 `json:"read_events"`
	BytesInBuffer int64 `json:"bytes"`
}

// ParseCPUStats parses the "key: value" lines of a per-CPU stats file.
func ParseCPUStats(cpu int, text string) CPUStats {
	st := CPUStats{CPU: cpu}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch strings.TrimSpace(k) {
		case "entries":
			st.Entries = n
		case "overrun":
			st.Overrun = n
		case "commit overrun":
			st.CommitOverrun = n
		case "dropped events":
			st.DroppedEvents = n
		case "read events":
			st.ReadEvents = n
		case "bytes":
			st.BytesInBuffer = n
		}
	}
	return st
}
