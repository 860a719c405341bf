package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ftctl/ftctl/count"
	"github.com/ftctl/ftctl/filters"
)

func TestNamedFuncs(t *testing.T) {
	var pats []*filters.Pattern
	for _, s := range []string{"vfs_read", "vfs_*", "ext4_sync_fs:mod:ext4", "*:mod:nls_utf8", "vfs_read", "ksys_rea?"} {
		p, err := filters.Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		pats = append(pats, p)
	}
	if got, want := namedFuncs(pats), []string{"vfs_read", "ext4_sync_fs"}; !slices.Equal(got, want) {
		t.Errorf("named %q, want %q", got, want)
	}
}

// count -o json: every function named gets a record each interval, 0 included, --top aside; a
// glob lists what was called; a summary ends it (issue 33: nothing at all was printed when the
// named functions were not called). Text is as before: the functions called, no summary.
func TestCountOutputNamedAndSummary(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	feed := func(output string, top int) string {
		var out bytes.Buffer
		g := &Globals{Out: &out, Err: new(bytes.Buffer), Output: output}
		o := &countOutput{g: g, top: top, named: []string{"vfs_read", "ksys_read", "nls_fn"}, method: "hist",
			functions: 40, start: t0, intervals: true}
		for i, cur := range []count.Counts{
			{"vfs_read": 3, "tcp_v4_rcv": 2},
			{"vfs_read": 3, "tcp_v4_rcv": 10, "ksys_read": 1, "nls_fn [nls_utf8]": 4},
			{"vfs_read": 3, "tcp_v4_rcv": 10, "ksys_read": 1, "nls_fn [nls_utf8]": 4},
		} {
			if err := o.interval(cur, t0.Add(time.Duration(i+1)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.summary(t0.Add(3500*time.Millisecond), true); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}

	lines := strings.Split(strings.TrimSuffix(feed("json", 1), "\n"), "\n")
	var got []string
	var last map[string]any
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r["schema"] != "ftctl/count/v1" && r["schema"] != "ftctl/count-summary/v1" {
			t.Errorf("schema: %s", l)
		}
		delete(r, "schema")
		keys := strings.Join(slices.Sorted(maps.Keys(r)), " ")
		if r["summary"] == true {
			if keys != "called calls functions intervals lower_bound method seconds summary time" {
				t.Errorf("the summary's fields: %s", keys)
			}
			last = r
			got = append(got, "summary")
			continue
		}
		// the fields of a function's record, as before the summary came
		if keys != "count func interval method seconds time" || r["method"] != "hist" || r["seconds"] != 1.0 {
			t.Errorf("a function's record: %s", l)
			continue
		}
		got = append(got, fmt.Sprintf("%v %v %v", r["interval"], r["func"], r["count"]))
	}
	want := []string{
		"1 vfs_read 3", "1 ksys_read 0", "1 nls_fn 0", // --top 1: vfs_read first; the named follow
		"2 tcp_v4_rcv 8", "2 vfs_read 0", "2 ksys_read 1", "2 nls_fn [nls_utf8] 4", // a module's key
		"3 vfs_read 0", "3 ksys_read 0", "3 nls_fn 0", // nothing called: the named, with 0
		"summary",
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := fmt.Sprint(last); s != "map[called:4 calls:18 functions:40 intervals:3 lower_bound:true method:hist seconds:3.5 summary:true time:2026-11-27T10:00:03.5Z]" {
		t.Errorf("summary %s", s)
	}

	// text as JSON: a row for every function named, 0 included (issue 33: a named function
	// not called had no row, and an interval of none said "0 functions"); no summary
	text := feed("text", 0)
	if strings.Contains(text, "summary") || strings.Count(text, "ksys_read") != 3 || strings.Count(text, "vfs_read") != 3 ||
		strings.Count(text, "nls_fn") != 3 {
		t.Errorf("text:\n%s", text)
	}
	if !slices.ContainsFunc(strings.Split(text, "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == "ksys_read 0" }) {
		t.Errorf("text has no row of ksys_read with 0 calls:\n%s", text)
	}
	for _, want := range []string{"4 functions, 5 calls", "4 functions, 13 calls", "3 functions, 0 calls"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}
