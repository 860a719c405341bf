package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestList(t *testing.T) {
	root := fakeRoot(t)
	for name, body := range map[string]string{
		"available_events":                     "sched:sched_switch\nkprobes:myopen\nsched:sched_wakeup\nftrace:function\n",
		"instances/x/available_tracers":        "function nop\n",
		"instances/x/current_tracer":           "nop\n",
		"instances/x/options/record-tgid":      "1\n",
		"instances/x/options/func_stack_trace": "0\n",
		"options/print-parent":                 "1\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "events"}, "ftrace:function\nkprobes:myopen\nsched:sched_switch\nsched:sched_wakeup\n"},
		{[]string{"list", "events", "sched:*"}, "sched:sched_switch\nsched:sched_wakeup\n"},
		{[]string{"list", "tracers"}, "function (current)\nnop\n"},
		{[]string{"-B", "x", "list", "tracers", "n*"}, "nop (current)\n"},
		{[]string{"-B", "x", "list", "options"}, "func_stack_trace         off\nrecord-tgid              on\n"},
		{[]string{"list", "options", "nothing*"}, ""},
	} {
		code, out, errs := run(t, append([]string{"--tracefs", root}, c.args...)...)
		if code != 0 || out != c.want {
			t.Errorf("%q: exit %d, stdout %q, want %q; %s", c.args, code, out, c.want, errs)
		}
	}
	code, out, _ := run(t, "--tracefs", root, "-B", "x", "list", "options", "-o", "json")
	var opts []struct {
		Name    string `json:"name"`
		Enabled bool   `json:"enabled"`
	}
	if err := json.Unmarshal([]byte(payload(t, "list-options", out)), &opts); code != 0 || err != nil || len(opts) != 2 || !opts[1].Enabled {
		t.Errorf("json: %d %v %q", code, err, out)
	}
	for _, a := range [][]string{{"list", "events", "["}, {"list", "events", "a", "b"}, {"-B", "nosuch", "list", "tracers"}} {
		if code, _, errs := run(t, append([]string{"--tracefs", root}, a...)...); code != 2 || !strings.Contains(errs, "ftctl:") {
			t.Errorf("%q: exit %d: %s", a, code, errs)
		}
	}
}
