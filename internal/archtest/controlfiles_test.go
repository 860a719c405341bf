package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// frontEnds are the packages that turn flags and keys into calls and render the results: they
// name no tracefs control file. What a file holds and how it is read or written is tracefs/'s
// (an accessor of tracefs.Instance or tracefs.FS); what it means is the package's that owns
// that meaning.
var frontEnds = []string{"cmd", "tui"}

// Where the control files belong, for the message of a literal found in a front end.
const (
	ownerTracefs = "tracefs/ (an accessor of tracefs.Instance or tracefs.FS: Tracer, TracingOn, SetTracingOn, BufferSizeKB, Clocks, EnabledEvents...)"
	ownerFilters = "filters/ (the function lists and their index: filters.FilterFile, filters.IndexFile, LoadIndex, the Applier)"
	ownerProbes  = "probes/ (probes.Manager: List, CheckFile, CheckKernel) or tracefs.FS.KprobesAndUprobes"
	ownerHist    = "hist/ or session/ (triggers and synthetic events: a session's Spec.Triggers and Spec.Dynamic)"
	ownerSession = "session/ (a session's settings: its pid filters, its graph's depth)"
)

// controlFiles are the names of tracefs's control files (kernel/trace/trace.c and the files of
// its event, probe, hist and stack tracers), each with the package it belongs to. Names that
// are ftctl's own words too (trace, enable, filter, format, id, hist, inject, events,
// instances, options, snapshot, stats: commands, flags, status labels, a count method) are left
// out as bare words; as paths they are caught by controlPrefixes.
var controlFiles = map[string]string{
	"available_events":                 ownerTracefs,
	"available_tracers":                ownerTracefs,
	"current_tracer":                   ownerTracefs,
	"tracing_on":                       ownerTracefs,
	"buffer_size_kb":                   ownerTracefs,
	"buffer_total_size_kb":             ownerTracefs,
	"buffer_subbuf_size_kb":            ownerTracefs,
	"buffer_percent":                   ownerTracefs,
	"free_buffer":                      ownerTracefs,
	"trace_clock":                      ownerTracefs,
	"trace_options":                    ownerTracefs,
	"trace_pipe":                       ownerTracefs,
	"trace_pipe_raw":                   ownerTracefs,
	"trace_marker":                     ownerTracefs,
	"trace_marker_raw":                 ownerTracefs,
	"trace_stat":                       ownerTracefs,
	"tracing_cpumask":                  ownerTracefs,
	"tracing_max_latency":              ownerTracefs,
	"tracing_thresh":                   ownerTracefs,
	"timestamp_mode":                   ownerTracefs,
	"error_log":                        ownerTracefs,
	"set_event":                        ownerTracefs,
	"saved_cmdlines":                   ownerTracefs,
	"saved_cmdlines_size":              ownerTracefs,
	"saved_tgids":                      ownerTracefs,
	"printk_formats":                   ownerTracefs,
	"README":                           "tracefs/ (FS.DetectFeatures reads it into Features)",
	"per_cpu":                          ownerTracefs,
	"function_profile_enabled":         ownerTracefs,
	"stack_trace":                      ownerTracefs,
	"stack_trace_filter":               ownerTracefs,
	"stack_max_size":                   ownerTracefs,
	"dyn_ftrace_total_info":            ownerTracefs,
	"set_ftrace_filter":                ownerFilters,
	"set_ftrace_notrace":               ownerFilters,
	"set_graph_function":               ownerFilters,
	"set_graph_notrace":                ownerFilters,
	"available_filter_functions":       ownerFilters,
	"available_filter_functions_addrs": ownerFilters,
	"enabled_functions":                ownerFilters,
	"touched_functions":                ownerFilters,
	"kprobe_events":                    ownerProbes,
	"uprobe_events":                    ownerProbes,
	"dynamic_events":                   ownerProbes,
	"kprobe_profile":                   ownerProbes,
	"uprobe_profile":                   ownerProbes,
	"user_events_data":                 ownerProbes,
	"user_events_status":               ownerProbes,
	"synthetic_events":                 ownerHist,
	"trigger":                          ownerHist,
	"hist_debug":                       ownerHist,
	"set_ftrace_pid":                   ownerSession,
	"set_ftrace_notrace_pid":           ownerSession,
	"set_event_pid":                    ownerSession,
	"set_event_notrace_pid":            ownerSession,
	"max_graph_depth":                  ownerSession,
}

// controlPrefixes are the beginnings of paths into tracefs's directories.
var controlPrefixes = []struct{ prefix, owner string }{
	{"events/", "tracefs/ (Instance.HasEvent, EventFormat, EventHist, CheckHist; FS.Events) or session/ (a session's events)"},
	{"options/", "tracefs/ (Instance.Option, Options) or session/ (a session's options)"},
	{"instances/", "tracefs/ (FS.Instance, HasInstance, Instances; Instance.Rel names a file for people)"},
	{"per_cpu/", "tracefs/ (Instance.CPUStats, the ring-buffer readers)"},
}

// controlFileLiterals lists the string literals of f that name a control file, each as
// "FILE:LINE:COL: ...", saying where the name belongs.
func controlFileLiterals(fset *token.FileSet, f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		owner, found := controlFiles[s]
		for _, p := range controlPrefixes {
			if !found && strings.HasPrefix(s, p.prefix) {
				owner, found = p.owner, true
			}
		}
		if found {
			out = append(out, fmt.Sprintf("%s: %q names a tracefs control file: cmd/ and tui/ are front ends and name none; it belongs to %s",
				fset.Position(lit.Pos()), s, owner))
		}
		return true
	})
	return out
}

// TestControlFilesOnlyBelowFrontEnds: the non-test files of cmd/ and tui/ hold no string
// literal that is a control file's name or a path into tracefs (issue 27: the front ends hold
// no kernel rule, and the names of the files are part of those rules).
func TestControlFilesOnlyBelowFrontEnds(t *testing.T) {
	top := root(t)
	fset := token.NewFileSet()
	for _, dir := range frontEnds {
		files, err := filepath.Glob(filepath.Join(top, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, p := range files {
			if strings.HasSuffix(p, "_test.go") {
				continue // tests may look at the files they check
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(top, p) // positions named from the module's root: cmd/x.go:12:3
			f, err := parser.ParseFile(fset, filepath.ToSlash(rel), b, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range controlFileLiterals(fset, f) {
				t.Error(msg)
			}
		}
	}
}

// The check must be able to fail: a front end naming control files is caught at each name,
// and its own words that are also file names (a flag, a subcommand, a count method) are not.
func TestControlFileCheckCatchesViolations(t *testing.T) {
	const src = `package cmd

func f(in *tracefs.Instance, system, event, name string) {
	in.ReadFile("tracing_on")
	in.Has("events/" + system + "/" + event + "/hist")
	in.Write("options/" + name, "1")
	in.FS().Top().Has("instances/" + name)
	_ = ` + "`set_ftrace_filter`" + `
	c.Flags().StringVar(&opts.Filter, "filter", "", "an event filter")
	_ = &cobra.Command{Use: "enable", Aliases: []string{"instances"}}
	_ = count.Method("hist")
	fmt.Errorf("no event %s:%s (events/%s/%s does not exist)", system, event, system, event)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "violation.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := controlFileLiterals(fset, f)
	want := []string{
		`violation.go:4:14: "tracing_on"`,
		`violation.go:5:9: "events/"`,
		`violation.go:6:11: "options/"`,
		`violation.go:7:20: "instances/"`,
		`violation.go:8:6: "set_ftrace_filter"`,
	}
	if len(got) != len(want) {
		t.Fatalf("found %d literals, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+" names a tracefs control file") {
			t.Errorf("finding %d: %s\nwant it to begin %s", i, got[i], w)
		}
	}
	if !strings.Contains(got[0], "belongs to tracefs/") || !strings.Contains(got[4], "belongs to filters/") {
		t.Errorf("the findings do not say where the names belong:\n%s", strings.Join(got, "\n"))
	}
}
