package cmd

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
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
	t.Run("reset", func(t *testing.T) {
		var got *ResetOptions
		c := NewCmdReset(g(), func(_ context.Context, o *ResetOptions) error { got = o; return nil })
		c.SetArgs([]string{"--all", "--yes"})
		if err := c.Execute(); err != nil || got == nil || !got.All || !got.Yes {
			t.Fatalf("%v %+v", err, got)
		}
	})
}
