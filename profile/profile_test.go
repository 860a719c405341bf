package profile

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestLoadErrors: what Load refuses, each error exactly as printed: FILE:LINE:COLUMN: PATH: REASON.
func TestLoadErrors(t *testing.T) {
	const head = "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: x\n"
	cases := []struct{ name, src, want string }{
		{"empty", "", "p.yaml: empty: a profile is one YAML or JSON document (apiVersion, kind, metadata, spec)"},
		{"comment only", "# nothing\n", "p.yaml: empty: a profile is one YAML or JSON document (apiVersion, kind, metadata, spec)"},
		{"document marker only", "---\n", "p.yaml: empty: a profile is one YAML or JSON document (apiVersion, kind, metadata, spec)"},
		{"two documents", head + "spec: {}\n---\n" + head + "spec: {}\n", "p.yaml:7:1: a second document: a file holds one profile"},
		{"unknown field", head + "spec:\n  instance:\n    tracr: nop\n", `p.yaml:7:5: spec.instance: unknown field "tracr" (did you mean "tracer"?)`},
		{"unknown field, case", head + "spec:\n  Events: []\n", `p.yaml:6:3: spec: unknown field "Events" (did you mean "events"?)`},
		{"unknown field, far", head + "spec: {}\nzzz: 1\n", `p.yaml:6:1: unknown field "zzz"; known here: apiVersion, kind, metadata, spec`},
		{"not a number", head + "spec:\n  instance:\n    bufferKB: big\n", `p.yaml:7:15: spec.instance.bufferKB: want a whole number, not "big"`},
		{"a fraction", head + "spec:\n  instance:\n    bufferKB: 1.5\n", `p.yaml:7:15: spec.instance.bufferKB: want a whole number, not the number 1.5`},
		{"not a bool", head + "spec:\n  instance:\n    tracingOn: yes\n", `p.yaml:7:16: spec.instance.tracingOn: want true or false, not "yes"`},
		{"option not a bool", head + "spec:\n  instance:\n    options: {sym-offset: 1}\n", `p.yaml:7:27: spec.instance.options.sym-offset: want true or false, not the number 1`},
		{"number for a string", "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name: 123\nspec: {}\n", `p.yaml:4:9: metadata.name: want a string, not the number 123 (quote it for a string: "123")`},
		{"null for a string", "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata:\n  name:\nspec: {}\n", `p.yaml:4:8: metadata.name: want a string, not nothing (null)`},
		{"string for a list", head + "spec:\n  probes: p:x vfs_read\n", `p.yaml:6:11: spec.probes: want a list (- ITEM lines, or [A, B]), not "p:x vfs_read"`},
		{"list for a mapping", head + "spec:\n  - events\n", `p.yaml:6:3: spec: want a mapping (KEY: VALUE lines), not a list`},
		{"not a mapping", "- a\n", `p.yaml:1:1: want a mapping (KEY: VALUE lines), not a list`},
		{"missing required", "apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nspec: {}\n", `p.yaml:1:1: the profile has no "metadata": it is required`},
		{"missing event name", head + "spec:\n  events:\n    - filter: pid == 1\n", `p.yaml:7:7: spec.events[0] has no "name": it is required`},
		{"duplicate key", "apiVersion: a\napiVersion: b\n", `p.yaml:2:1: key "apiVersion" given twice (first at line 1, column 1)`},
		{"duplicate option", head + "spec:\n  instance:\n    options:\n      a: true\n      a: false\n", `p.yaml:9:7: key "a" given twice (first at line 8, column 7)`},
		{"anchor", head + "spec:\n  instance: &i {}\n", `p.yaml:6:13: anchors and aliases (&NAME, *NAME) are not taken in a profile: write the value out`},
		{"merge key", head + "spec:\n  <<: {}\n", `p.yaml:6:3: merge keys (<<) are not taken in a profile: write the keys out`},
		{"tag", head + "spec:\n  instance:\n    clock: !!str local\n", `p.yaml:7:12: tags (!!str) are not taken in a profile: quote a value to make it a string`},
		{"tab", "apiVersion: a\n\tkind: b\n", `p.yaml:2:1: a tab in indentation: YAML indents with spaces`},
		{"unterminated quote", "apiVersion: \"a\nkind: b\n", `p.yaml:1:13: YAML syntax: could not find end character of double-quoted text`},
		{"json unknown field", `{"apiVersion": "ftctl.dev/v1alpha1", "kind": "TracingProfile", "metadata": {"name": "x", "nmae": "y"}, "spec": {}}`,
			`p.yaml:1:90: metadata: unknown field "nmae" (did you mean "name"?)`},
		{"not UTF-8", "apiVersion: \xff\n", "p.yaml: not UTF-8 text"},
		{"too deep", strings.Repeat("[", maxDepth+1), "p.yaml:1:33: nested more than 32 deep: not a profile"},
		{"too deep, block", strings.Repeat("- ", maxDepth+1) + "x", "p.yaml:1:65: nested more than 32 deep: not a profile"},
		{"too many keys", strings.Repeat("k: 1\n", maxKeys+1), "p.yaml:4097:2: more than 4096 keys: not a profile"},
		{"too large", strings.Repeat("#", MaxFileSize+1), "p.yaml: larger than 1048576 bytes (1 MiB): not a profile"},
		{"too many words", "a:\n" + strings.Repeat("- x\n", maxWords/2+1), "p.yaml:50001:3: more than 100000 words: not a profile"},
		{"too many words, flow", "[" + strings.Repeat("1,", maxWords/2) + "1]", "p.yaml:1:100001: more than 100000 words: not a profile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Load("p.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("loaded %+v", p)
			}
			if err.Error() != c.want {
				t.Errorf("got  %s\nwant %s", err, c.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v is not ErrInvalid", err)
			}
			var e *Error
			if !errors.As(err, &e) || strings.Contains(e.Reason, "\n") || strings.Contains(e.Reason, "\x1b") {
				t.Errorf("%q: want one *Error of one line, without colours", err)
			}
		})
	}
}

// TestExamples: the repository's examples load and validate, in YAML and as JSON.
func TestExamples(t *testing.T) {
	for _, f := range []string{"testdata/minimal.yaml", "testdata/full.yaml"} {
		p, err := LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	p, err := Load("folded.yaml", []byte(`apiVersion: ftctl.dev/v1alpha1
kind: TracingProfile
metadata: {name: folded}
spec:
  triggers:
    - event: sched:sched_switch
      trigger: >
        hist:keys=next_pid
        if next_pid != 0
`))
	if err != nil || p.Validate() != nil || p.Spec.Triggers[0].Trigger != "hist:keys=next_pid if next_pid != 0" {
		t.Errorf("a trigger folded with >: %v %q", err, p.Spec.Triggers)
	}
	p, err = LoadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Name != "slowopen" || p.Spec.Instance.TracingOn == nil || !*p.Spec.Instance.TracingOn ||
		!p.Spec.Instance.Options["funcgraph-proc"] || len(p.Spec.Triggers) != 3 || p.Spec.Synthetic[0].Fields != "u64 lat; pid_t pid" {
		t.Errorf("decoded %+v", p)
	}
}

func TestLoadFile(t *testing.T) {
	if _, err := LoadFile("testdata/missing.yaml"); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("a missing file: %v", err)
	}
	big := t.TempDir() + "/big.yaml"
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a large file: %v", err)
	}
}

// TestValidateBroken: testdata/broken.yaml breaks every rule once; each error, in the file's
// order, exactly.
func TestValidateBroken(t *testing.T) {
	p, err := LoadFile("testdata/broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%v is not ErrInvalid", err)
	}
	want := []string{
		"3:13: apiVersion: \"ftctl.dev/v2\" is not a version this ftctl reads; it reads ftctl.dev/v1alpha1",
		"4:7: kind: \"Profile\" is not a kind this ftctl reads; it reads TracingProfile",
		"6:9: metadata.name: \"Slow_Open\": a profile's name is 1 to 32 lower-case letters and digits (its instance is ftctl-owned-NAME)",
		"8:14: spec.requires[0]: \"kprobe\" is not a feature ftctl knows (did you mean \"kprobes\"?); it knows function, function_graph, hist-triggers, kprobes, kretprobes, uprobes, fprobes, synthetic-events, btf",
		"8:27: spec.requires[2]: \"btf\" is already required at spec.requires[1]",
		"10:15: spec.instance.bufferKB: 5000000: the buffer is 1 to 4194304 KiB per CPU (0 or none: the kernel's size)",
		"11:12: spec.instance.clock: \"x86 tsc\": a clock is a plain word (local, global, mono, boot...)",
		"12:13: spec.instance.tracer: \"functon\": a profile's tracer is function, function_graph or nop (did you mean \"function\"?)",
		"14:8: spec.instance.options[\"trace/printk\"]: \"trace/printk\": an option's name is a plain word (letters, digits, _ and -), as under options/",
		"16:15: spec.functions.filter[0]: \"!vfs_statx\": a leading '!' removes functions; write \"vfs_statx\" under spec.functions.notrace",
		"16:29: spec.functions.filter[1]: \"func:traceoff\": only the ':mod:MODULE' qualifier is supported; function commands (func:traceoff, ...) are left to the kernel's own syntax",
		"16:46: spec.functions.filter[2]: \"vfs read\": contains ' ': patterns are single words of printable ASCII",
		"16:58: spec.functions.filter[3]: ${group} is taken only at the start of an event's name (${group}:EVENT, synthetic:${group}_NAME) and in trigger texts",
		"19:41: spec.events[0].filter: invalid event filter: Invalid operator",
		"20:13: spec.events[1].name: \"sched:sched_switch\" is already enabled at spec.events[0]",
		"21:14: spec.events[2].name: \"sched:*\": an event is named in full; globs are not taken",
		"22:13: spec.events[3].name: \"sched/sched_switch\": an event is SYSTEM:EVENT, with ':'",
		"23:14: spec.events[4].name: \"sched:\": an event is SYSTEM:EVENT, neither empty",
		"24:13: spec.events[5].name: \"${group}:nope\": the profile has no probe named \"nope\"",
		"25:13: spec.events[6].name: \"${group}\": name one of the profile's probes, ${group}:NAME",
		"26:13: spec.events[7].name: \"synthetic:${group}_lot\": the profile has no synthetic event named \"lot\" (did you mean \"lat\"?)",
		"27:14: spec.events[8].name: ${group} is taken only at the start of an event's name (${group}:EVENT, synthetic:${group}_NAME) and in trigger texts",
		"29:22: spec.events[9].filter: ${group} is taken only at the start of an event's name (${group}:EVENT, synthetic:${group}_NAME) and in trigger texts",
		"32:8: spec.probes[1]: \"p do_sys_openat2\" has no name: a profile's probe is named (p:NAME ...), for its events and triggers",
		"33:8: spec.probes[2]: a second probe named \"open\" (the first is spec.probes[0])",
		"34:23: spec.probes[3]: invalid probe definition: Invalid register name",
		"35:10: spec.probes[4]: ${group} is not taken in a probe definition: the profile's probes are always in its group",
		"36:8: spec.probes[5]: \"-:open\" removes a probe: a profile's probes are removed with it",
		"37:8: spec.probes[6]: empty: write a definition such as \"p:myopen do_sys_openat2\"",
		"41:13: spec.synthetic[1].name: a second synthetic event named \"lat\" (the first is spec.synthetic[0])",
		"43:13: spec.synthetic[2].name: \"1x\": a synthetic event's name is a C identifier (letters, digits and _)",
		"44:16: spec.synthetic[2].fields: empty: a synthetic event has fields, such as \"u64 lat; pid_t pid\"",
		"45:13: spec.synthetic[3].name: \"a_very_very_very_very_very_very_very_very_long_name_lat\" is too long: ftctl_owned_Slow_Open_a_very_very_very_very_very_very_very_very_long_name_lat is over the kernel's 63 characters",
		"48:14: spec.triggers[0].event: \"sched\": a trigger is on one event, SYSTEM:EVENT",
		"51:17: spec.triggers[1].trigger: empty: write the trigger as the event's trigger file takes it (hist:keys=pid, traceoff...)",
		"52:14: spec.triggers[2].event: \"${group}:opne\": the profile has no probe named \"opne\" (did you mean \"open\"?)",
	}
	got := strings.Split(err.Error(), "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = strings.TrimPrefix(got[i], "testdata/broken.yaml:")
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\ngot  %s\nwant %s", i+1, g, w)
		}
	}
}

// TestValidate: the rules one at a time, on profiles built in Go (no file: errors name paths),
// and what they let through.
func TestValidate(t *testing.T) {
	base := func() *Profile {
		return &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "p1"}}
	}
	cases := []struct {
		name string
		edit func(p *Profile)
		want string // "" for valid
	}{
		{"minimal", func(p *Profile) {}, ""},
		{"function tracer with a filter", func(p *Profile) {
			p.Spec.Instance.Tracer = "function"
			p.Spec.Functions.Filter = []string{"vfs_read"}
		}, ""},
		{"filter alone picks function", func(p *Profile) { p.Spec.Functions.Filter = []string{"vfs_*"} }, ""},
		{"function with no filter", func(p *Profile) { p.Spec.Instance.Tracer = "function_graph" },
			"spec.instance.tracer: function_graph with no spec.functions.filter and no spec.graph.roots would trace every function; name the functions to trace"},
		{"filter with nop", func(p *Profile) {
			p.Spec.Instance.Tracer = "nop"
			p.Spec.Functions.Filter = []string{"vfs_read"}
		}, "spec.functions.filter: given with tracer nop, which traces no function; set spec.instance.tracer to function or function_graph, or leave it out"},
		{"name too long", func(p *Profile) { p.Metadata.Name = strings.Repeat("a", 33) },
			`metadata.name: "` + strings.Repeat("a", 33) + `": a profile's name is 1 to 32 lower-case letters and digits (its instance is ftctl-owned-NAME)`},
		{"name empty", func(p *Profile) { p.Metadata.Name = "" },
			`metadata.name: "": a profile's name is 1 to 32 lower-case letters and digits (its instance is ftctl-owned-NAME)`},
		{"buffer zero and max", func(p *Profile) { p.Spec.Instance.BufferKB = MaxBufferKB }, ""},
		{"own probe's event", func(p *Profile) {
			p.Spec.Probes = []string{"r:grp/ret vfs_read"}
			p.Spec.Events = []Event{{Name: "${group}:ret", Filter: "common_pid != 1"}}
			p.Spec.Triggers = []Trigger{{Event: "${group}:ret", Trigger: "traceoff if common_pid == 1"}}
		}, ""},
		{"uprobe, grammar only", func(p *Profile) { p.Spec.Probes = []string{"p:u /no/such/file:main"} }, ""},
		{"fprobe", func(p *Profile) { p.Spec.Probes = []string{"f:fe vfs_read"} }, ""},
		{"synthetic event's triggers", func(p *Profile) {
			p.Spec.Synthetic = []Synthetic{{Name: "lat", Fields: "u64 lat"}}
			p.Spec.Triggers = []Trigger{{Event: "synthetic:${group}_lat", Trigger: "hist:keys=lat"}}
		}, ""},
		{"synthetic without _", func(p *Profile) {
			p.Spec.Synthetic = []Synthetic{{Name: "lat", Fields: "u64 lat"}}
			p.Spec.Events = []Event{{Name: "synthetic:${group}lat"}}
		}, `spec.events[0].name: "synthetic:${group}lat": the profile's synthetic events are synthetic:${group}_NAME`},
		{"uses another's event", func(p *Profile) { p.Spec.Uses = []string{"theirs:open", "synthetic:their_lat"} }, ""},
		{"uses its own", func(p *Profile) { p.Spec.Uses = []string{"${group}:open"} },
			`spec.uses[0]: "${group}:open": the profile's own events are not listed in uses`},
		{"uses twice", func(p *Profile) { p.Spec.Uses = []string{"a:b", "a:b"} }, `spec.uses[1]: "a:b" is already listed at spec.uses[0]`},
		{"newline in a trigger", func(p *Profile) { p.Spec.Triggers = []Trigger{{Event: "a:b", Trigger: "traceon\ntraceoff"}} },
			"spec.triggers[0].trigger: a trigger is one line"},
		{"newline in a probe", func(p *Profile) { p.Spec.Probes = []string{"p:a vfs_read\np:b vfs_write"} },
			"spec.probes[0]: a definition is one line"},
		{"several errors, each on its line", func(p *Profile) {
			p.Kind = "x"
			p.Spec.Instance.Tracer = "blk"
		}, `kind: "x" is not a kind this ftctl reads; it reads TracingProfile` + "\n" +
			`spec.instance.tracer: "blk": a profile's tracer is function, function_graph or nop`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := base()
			c.edit(p)
			err := p.Validate()
			var got string
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// FuzzLoad: Load never panics, and what it loads validates without panicking.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"testdata/minimal.yaml", "testdata/full.yaml", "testdata/broken.yaml",
		"testdata/flight.yaml", "testdata/flight-broken.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion": "ftctl.dev/v1alpha1", "kind": "TracingProfile", "metadata": {"name": "x"}, "spec": {"events": [{"name": "a:b"}]}}`))
	f.Add([]byte("a: &x [*x, *x]\n"))
	f.Add([]byte("- - - - [[{a: b}]]\n"))
	f.Add([]byte("apiVersion: ftctl.dev/v1alpha1\nkind: TracingProfile\nmetadata: {name: g}\nspec:\n  graph: {roots: [vfs_read*], notrace: [x], depth: 3}\n  topLevel: {claim: true}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Load("f.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v is not ErrInvalid", err)
			}
			return
		}
		if err := p.Validate(); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v is not ErrInvalid", err)
		}
	})
}

// A profile Load returned knows its file; a copy of it does not, and its errors name paths.
func TestPositionsFollowTheProfile(t *testing.T) {
	p, err := LoadFile("testdata/broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	first := strings.Split(q.Validate().Error(), "\n")[0]
	if first != `apiVersion: "ftctl.dev/v2" is not a version this ftctl reads; it reads ftctl.dev/v1alpha1` {
		t.Errorf("a copy: %q", first)
	}
	if !strings.HasPrefix(p.Validate().Error(), "testdata/broken.yaml:3:13: ") {
		t.Errorf("the original lost its positions")
	}
}

// The events a profile names, wherever it names them: what the ownership check looks up.
func TestReferences(t *testing.T) {
	p := &Profile{Metadata: Metadata{Name: "p1"}, Spec: Spec{
		Events: []Event{{Name: "theirs:open"}, {Name: "${group}:mine"}, {Name: "kprobes"}},
		Triggers: []Trigger{
			{Event: "sched:sched_switch", Trigger: "hist:keys=next_pid:onmatch(theirs.start).trace(their_lat,$x)"},
			{Event: "a:b", Trigger: "hist:keys=pid:onmatch(x.y).old_synth($v)"},
			{Event: "a:c", Trigger: "enable_event:grp:ev:2 if pid > 1"},
			{Event: "a:d", Trigger: "hist:keys=pid:onmax($v).save(pid)"},
		},
		Probes: []string{"e:ep theirs/open $x", "e:ep2 sys.ev", "p:kp vfs_read"},
	}}
	var got []string
	for _, r := range p.references() {
		got = append(got, r.path+" "+r.event)
	}
	want := []string{
		"spec.events[0].name theirs:open", "spec.events[1].name ftctl_owned_p1:mine", "spec.events[2].name kprobes",
		"spec.triggers[0].event sched:sched_switch", "spec.triggers[0].trigger theirs:start", "spec.triggers[0].trigger synthetic:their_lat",
		"spec.triggers[1].event a:b", "spec.triggers[1].trigger x:y", "spec.triggers[1].trigger synthetic:old_synth",
		"spec.triggers[2].event a:c", "spec.triggers[2].trigger grp:ev",
		"spec.triggers[3].event a:d",
		"spec.probes[0] theirs:open", "spec.probes[1] sys:ev",
	}
	if !slices.Equal(got, want) {
		t.Errorf("references:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
