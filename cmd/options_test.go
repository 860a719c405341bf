package cmd

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/filters"
)

// The cli/cli way: each command's flags and arguments parse into its options struct, captured
// through runF without running anything.
func TestOptionsParsed(t *testing.T) {
	g := func() *Globals {
		return &Globals{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	}
	t.Run("instance create", func(t *testing.T) {
		var got *InstanceCreateOptions
		c := NewCmdInstanceCreate(g(), func(_ context.Context, o *InstanceCreateOptions) error { got = o; return nil })
		c.SetArgs([]string{"a", "b"})
		if err := c.Execute(); err != nil || got == nil || !slices.Equal(got.Names, []string{"a", "b"}) {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("instance remove", func(t *testing.T) {
		var got *InstanceRemoveOptions
		c := NewCmdInstanceRemove(g(), func(_ context.Context, o *InstanceRemoveOptions) error { got = o; return nil })
		c.SetArgs([]string{"x"})
		if err := c.Execute(); err != nil || got == nil || !slices.Equal(got.Names, []string{"x"}) {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("mount", func(t *testing.T) {
		var got *MountOptions
		c := NewCmdMount(g(), func(_ context.Context, o *MountOptions) error { got = o; return nil })
		c.SetArgs([]string{"/mnt/t"})
		if err := c.Execute(); err != nil || got == nil || got.Dir != "/mnt/t" {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("trace", func(t *testing.T) {
		var got *TraceOptions
		c := NewCmdTrace(g(), func(_ context.Context, o *TraceOptions) error { got = o; return nil })
		c.SetArgs([]string{"-f", "vfs_*", "--function", "ksys_*", "-n", "vfs_readv", "-p", "p:x vfs_read", "-e", "sched",
			"--pid", "1,2", "--duration", "3s", "--count", "9", "--include-self", "-b", "4096", "-C", "global",
			"-O", "sym-offset", "--option", "norecord-tgid", "--filter", "common_pid != 1", "--", "ls", "-l"})
		if err := c.Execute(); err != nil || got == nil {
			t.Fatalf("%v", err)
		}
		if !slices.Equal(got.Functions, []string{"vfs_*", "ksys_*"}) || !slices.Equal(got.EventFilter, []string{"common_pid != 1"}) || !slices.Equal(got.Notrace, []string{"vfs_readv"}) ||
			!slices.Equal(got.Probes, []string{"p:x vfs_read"}) || !slices.Equal(got.Events, []string{"sched"}) ||
			!slices.Equal(got.PID, []int{1, 2}) || got.Duration != 3*time.Second || got.Count != 9 ||
			!got.IncludeSelf || !slices.Equal(got.Command, []string{"ls", "-l"}) || got.BufferKB != 4096 ||
			got.Clock != "global" || !slices.Equal(got.Options, []string{"sym-offset", "norecord-tgid"}) {
			t.Errorf("%+v", got)
		}
	})
	t.Run("record", func(t *testing.T) {
		var got *RecordOptions
		c := NewCmdRecord(g(), func(_ context.Context, o *RecordOptions) error { got = o; return nil })
		c.SetArgs([]string{"-f", "vfs_*", "-e", "sched", "--filter", "common_pid != 1", "-C", "global", "-O", "sym-offset",
			"--option", "norecord-tgid", "--include-self", "-b", "4096", "--duration", "3s", "--count", "9", "-w", "x.dat", "--", "ls"})
		if err := c.Execute(); err != nil || got == nil {
			t.Fatalf("%v", err)
		}
		if !slices.Equal(got.Functions, []string{"vfs_*"}) || !slices.Equal(got.EventFilter, []string{"common_pid != 1"}) ||
			got.Clock != "global" || !slices.Equal(got.Options, []string{"sym-offset", "norecord-tgid"}) || !got.IncludeSelf ||
			got.BufferKB != 4096 || got.Duration != 3*time.Second || got.Count != 9 || got.File != "x.dat" || !slices.Equal(got.Command, []string{"ls"}) {
			t.Errorf("%+v", got)
		}
	})
	t.Run("probe add", func(t *testing.T) {
		var got *ProbeAddOptions
		c := NewCmdProbeAdd(g(), func(_ context.Context, o *ProbeAddOptions) error { got = o; return nil })
		c.SetArgs([]string{"p:x", "vfs_read", "n=%di", "--filter", "n == 1", "--enable", "--append"})
		if err := c.Execute(); err != nil || got == nil || got.Definition != "p:x vfs_read n=%di" ||
			got.Filter != "n == 1" || !got.Enable || !got.Append {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("probe list", func(t *testing.T) {
		var got *ProbeListOptions
		c := NewCmdProbeList(g(), func(_ context.Context, o *ProbeListOptions) error { got = o; return nil })
		c.SetArgs([]string{})
		if err := c.Execute(); err != nil || got == nil || got.G == nil {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("probe remove", func(t *testing.T) {
		var got *ProbeRemoveOptions
		c := NewCmdProbeRemove(g(), func(_ context.Context, o *ProbeRemoveOptions) error { got = o; return nil })
		c.SetArgs([]string{"a", "kprobes/b"})
		if err := c.Execute(); err != nil || got == nil || !slices.Equal(got.Names, []string{"a", "kprobes/b"}) || got.AllOwned {
			t.Fatalf("%v %+v", err, got)
		}
		c = NewCmdProbeRemove(g(), func(_ context.Context, o *ProbeRemoveOptions) error { got = o; return nil })
		c.SetArgs([]string{"--all-owned"})
		if err := c.Execute(); err != nil || got == nil || len(got.Names) != 0 || !got.AllOwned {
			t.Fatalf("%v %+v", err, got)
		}
	})
	for _, on := range []bool{true, false} {
		t.Run("probe enable/disable", func(t *testing.T) {
			var got *ProbeEnableOptions
			c := NewCmdProbeEnable(g(), on, func(_ context.Context, o *ProbeEnableOptions) error { got = o; return nil })
			c.SetArgs([]string{"a", "b"})
			if err := c.Execute(); err != nil || got == nil || got.On != on || !slices.Equal(got.Names, []string{"a", "b"}) {
				t.Fatalf("%v %+v", err, got)
			}
		})
	}
	t.Run("probe format", func(t *testing.T) {
		var got *ProbeFormatOptions
		c := NewCmdProbeFormat(g(), func(_ context.Context, o *ProbeFormatOptions) error { got = o; return nil })
		c.SetArgs([]string{"kprobes/x"})
		if err := c.Execute(); err != nil || got == nil || got.Name != "kprobes/x" {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("reset", func(t *testing.T) {
		var got *ResetOptions
		c := NewCmdReset(g(), func(_ context.Context, o *ResetOptions) error { got = o; return nil })
		c.SetArgs([]string{"--all", "--yes"})
		if err := c.Execute(); err != nil || got == nil || !got.All || !got.Yes {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("filter set", func(t *testing.T) {
		var got *ListChangeOptions
		c := NewCmdListChange(g(), filters.FilterFile, filters.OpSet, func(_ context.Context, o *ListChangeOptions) error { got = o; return nil })
		c.SetArgs([]string{"vfs_*", "ksys_read", "--except", "vfs_readv", "--except", "vfs_write", "--from-file", "f.txt", "--regex"})
		if err := c.Execute(); err != nil || got == nil {
			t.Fatalf("%v", err)
		}
		if got.File != filters.FilterFile || got.Op != filters.OpSet || !slices.Equal(got.Patterns.Args, []string{"vfs_*", "ksys_read"}) ||
			!slices.Equal(got.Except, []string{"vfs_readv", "vfs_write"}) || got.Patterns.FromFile != "f.txt" || !got.Patterns.Regex {
			t.Errorf("%+v", got)
		}
	})
	t.Run("notrace add and remove", func(t *testing.T) {
		for _, op := range []filters.Op{filters.OpAdd, filters.OpRemove} {
			var got *ListChangeOptions
			c := NewCmdListChange(g(), filters.NotraceFile, op, func(_ context.Context, o *ListChangeOptions) error { got = o; return nil })
			c.SetArgs([]string{"*spin_lock*"})
			if err := c.Execute(); err != nil || got == nil || got.File != filters.NotraceFile || got.Op != op ||
				!slices.Equal(got.Patterns.Args, []string{"*spin_lock*"}) || got.Except != nil {
				t.Fatalf("%v: %v %+v", op, err, got)
			}
			if c.Flags().Lookup("except") != nil {
				t.Errorf("notrace %v has --except", op)
			}
		}
	})
	t.Run("filter show", func(t *testing.T) {
		var got *ListShowOptions
		c := NewCmdListShow(g(), filters.NotraceFile, func(_ context.Context, o *ListShowOptions) error { got = o; return nil })
		c.SetArgs(nil)
		if err := c.Execute(); err != nil || got == nil || got.File != filters.NotraceFile {
			t.Fatalf("%v %+v", err, got)
		}
	})
	t.Run("filter clear", func(t *testing.T) {
		var got *ListClearOptions
		c := NewCmdListClear(g(), filters.FilterFile, func(_ context.Context, o *ListClearOptions) error { got = o; return nil })
		c.SetArgs([]string{"--force"})
		if err := c.Execute(); err != nil || got == nil || got.File != filters.FilterFile || !got.Force {
			t.Fatalf("%v %+v", err, got)
		}
		if NewCmdListClear(g(), filters.NotraceFile, nil).Flags().Lookup("force") != nil {
			t.Error("notrace clear has --force")
		}
	})
	t.Run("functions", func(t *testing.T) {
		var got *FunctionsOptions
		c := NewCmdFunctions(g(), func(_ context.Context, o *FunctionsOptions) error { got = o; return nil })
		c.SetArgs([]string{"--count", "vfs_*", "*:mod:ext4"})
		if err := c.Execute(); err != nil || got == nil || !got.Count || !slices.Equal(got.Patterns.Args, []string{"vfs_*", "*:mod:ext4"}) {
			t.Fatalf("%v %+v", err, got)
		}
	})
}
