package tracefs

import (
	"strconv"
	"strings"
)

// LogEntry is one entry of a trace array's error_log (kernel/trace/trace.c, tracing_log_err and
// tracing_err_log_seq_show, since Linux 5.2):
//
//	[    2.653011] trace_kprobe: error: Invalid register name
//	  Command: p:fty vfs_read %zz
//	                          ^
//
// The caret line is sizeof("  Command: ")-1 = 11 spaces, then Pos more, then "^".
type LogEntry struct {
	Stamp    string `json:"timestamp"` // as printed, "2.653011"
	Micros   uint64 `json:"-"`         // the same in µs, for ordering
	Location string `json:"location"`  // "trace_kprobe", "event filter parse error", ...
	Message  string `json:"message"`   // "Invalid register name"
	Command  string `json:"command"`   // the command as the kernel re-joined it
	Pos      int    `json:"pos"`       // byte offset of the caret in Command, -1 when absent
}

// KernelDiagnosis is the kernel's error_log entry about a rejected write (a probe definition,
// an event filter, a hist trigger), its caret moved onto the user's text. It lives beside
// LogEntry so that every grammar that writes to the kernel (probes/, eventfilter/, hist/) can
// report the kernel's refusal the same way without importing one another.
type KernelDiagnosis struct {
	Message string // the kernel's words
	Source  string // the user's text (a definition, a filter, a trigger)
	Pos     int    // caret position in Source, -1 when the kernel gave none
	Command string // what the kernel saw
}

const errorLogCmdPrefix = "  Command: "

// ParseErrorLog parses error_log text. Lines it cannot place are ignored: the log is advisory.
func ParseErrorLog(text string) []LogEntry {
	var out []LogEntry
	var cur *LogEntry
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "["):
			end := strings.Index(line, "]")
			if end < 0 {
				cur = nil
				continue
			}
			out = append(out, LogEntry{Pos: -1})
			cur = &out[len(out)-1]
			cur.Stamp = strings.TrimSpace(line[1:end])
			cur.Micros = parseStampMicros(cur.Stamp)
			rest := strings.TrimPrefix(line[end+1:], " ")
			if loc, msg, ok := strings.Cut(rest, ": error: "); ok {
				cur.Location, cur.Message = loc, msg
			} else {
				cur.Message = rest
			}
		case cur != nil && strings.HasPrefix(line, errorLogCmdPrefix):
			cur.Command = line[len(errorLogCmdPrefix):]
		case cur != nil && strings.HasSuffix(line, "^") && strings.TrimLeft(line, " ") == "^":
			cur.Pos = len(line) - 1 - len(errorLogCmdPrefix)
			if cur.Pos < 0 {
				cur.Pos = 0
			}
		}
	}
	return out
}

func parseStampMicros(s string) uint64 {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseUint(sec, 10, 64)
	if err != nil {
		return 0
	}
	for len(frac) < 6 {
		frac += "0"
	}
	us, _ := strconv.ParseUint(frac[:6], 10, 64)
	return n*1_000_000 + us
}

// Format renders the entry as the kernel would, each line prefixed by indent, with the
// message labelled as the kernel's own words.
func (e LogEntry) Format(indent string) string {
	var b strings.Builder
	b.WriteString(indent)
	b.WriteString("kernel error_log: ")
	if e.Location != "" {
		b.WriteString(e.Location)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Command != "" {
		b.WriteString("\n" + indent + "  Command: " + e.Command)
		if e.Pos >= 0 && e.Pos <= len(e.Command) {
			b.WriteString("\n" + indent + strings.Repeat(" ", len("  Command: ")+e.Pos) + "^")
		}
	}
	return b.String()
}
