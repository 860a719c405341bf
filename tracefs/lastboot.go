package tracefs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The persistent ring buffer (Linux 6.12): an instance the kernel creates at boot from
// `trace_instance=NAME@LABEL` in memory that `reserve_mem=SIZE:ALIGN:LABEL` set aside, whose
// pages a warm reboot keeps. Such an instance has a last_boot_info file; others do not
// (kernel/trace/trace.c creates it only for an instance with a memory range).

// CmdlinePath is the running kernel's command line.
const CmdlinePath = "/proc/cmdline"

// ErrNoLastBoot: the instance is not in reserved memory (no last_boot_info).
var ErrNoLastBoot = fmt.Errorf("%w: the instance is not a persistent ring buffer (no last_boot_info)", ErrUnavailable)

// LastBoot is what an instance's last_boot_info says of the boot whose events its ring holds.
type LastBoot struct {
	// Text and Data are the current boot's addresses minus the previous boot's, of the
	// kernel's text and of its data (6.12's "text delta:" and "data delta:"; an address the
	// previous boot recorded plus Text is the same code now).
	Text, Data int64
	// KASLR, on kernels that print the previous boot's KASLR base instead of deltas ("ADDR
	// [kernel]", after 6.12), is that base; Text and Data are then 0 and HasBase is true.
	KASLR   uint64
	HasBase bool
	// Current: the ring holds this boot's events only ("# Current": tracing was started in
	// this boot, which discarded the previous boot's; kernels after 6.12).
	Current bool
}

// LastBootInfo reads the instance's last_boot_info; ErrNoLastBoot when it has none.
func (i *Instance) LastBootInfo() (LastBoot, error) {
	b, err := i.ReadFile("last_boot_info")
	if errors.Is(err, ErrUnavailable) || errors.Is(err, os.ErrNotExist) {
		return LastBoot{}, ErrNoLastBoot
	}
	if err != nil {
		return LastBoot{}, err
	}
	return ParseLastBootInfo(string(b))
}

// ParseLastBootInfo reads last_boot_info's text. 6.12 prints "text delta:\t%ld\ndata
// delta:\t%ld\n" (kernel/trace/trace.c, tracing_last_boot_read); later kernels print the
// previous boot's KASLR base as "%lx\t[kernel]" (with modules after it), or "# Current".
func ParseLastBootInfo(text string) (LastBoot, error) {
	var lb LastBoot
	seen := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line == "# Current":
			lb.Current, seen = true, true
		case strings.HasPrefix(line, "text delta:"), strings.HasPrefix(line, "data delta:"):
			v, err := strconv.ParseInt(strings.TrimSpace(line[len("text delta:"):]), 10, 64)
			if err != nil {
				return LastBoot{}, fmt.Errorf("last_boot_info: %q: not a number", line)
			}
			if line[0] == 't' {
				lb.Text = v
			} else {
				lb.Data = v
			}
			seen = true
		case strings.HasSuffix(line, "[kernel]"):
			f := strings.Fields(line)
			v, err := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 64)
			if err != nil {
				return LastBoot{}, fmt.Errorf("last_boot_info: %q: not an address", line)
			}
			lb.KASLR, lb.HasBase, seen = v, true, true
		}
	}
	if !seen {
		return LastBoot{}, fmt.Errorf("last_boot_info: %s: neither deltas nor a base", quoteData(text))
	}
	return lb, nil
}

// Cmdline is the running kernel's command line, split into its parameters (quotes kept).
func Cmdline() ([]string, error) {
	b, err := os.ReadFile(CmdlinePath)
	if err != nil {
		return nil, err
	}
	return SplitCmdline(string(b)), nil
}

// SplitCmdline splits a kernel command line as the kernel does (lib/cmdline.c next_arg):
// at blanks outside double quotes.
func SplitCmdline(s string) []string {
	var out []string
	var cur bytes.Buffer
	quoted := false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case (r == ' ' || r == '\t' || r == '\n') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
