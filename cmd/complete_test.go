package cmd

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/internal/fixture"
)

// TestMain lets the test binary stand in for ftctl: run through a link named ftctl (the bash
// completion test puts one on PATH), it is ftctl.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "ftctl" {
		os.Exit(Main())
	}
	// The unit tests never consult the kernel running them: no kallsyms, no BTF unless a
	// test gives a fixture (FTCTL_BTF).
	none := filepath.Join(os.TempDir(), "ftctl-unit-tests-have-no-kernel")
	os.Setenv("FTCTL_KALLSYMS", filepath.Join(none, "kallsyms"))
	os.Setenv("FTCTL_BTF", filepath.Join(none, "btf"))
	os.Setenv("FTCTL_STATE_DIR", filepath.Join(none, "run"))
	os.Exit(m.Run())
}

// completionRoot is a fake tracing directory with what completion reads: the 6.12 function
// index, instances (inc42 with a filter of its own), event directories and kprobe_events.
func completionRoot(t *testing.T) string {
	t.Helper()
	root := fakeRootWithFunctions(t)
	for name, body := range map[string]string{
		"set_ftrace_filter":                   "vfs_read\nvfs_write\nchar2uni [nls_utf8]\ndo_exit:traceoff:unlimited\n",
		"set_ftrace_notrace":                  "schedule\n",
		"instances/a/set_ftrace_filter":       "#### all functions enabled ####\n",
		"instances/b/set_ftrace_filter":       "#### all functions enabled ####\n",
		"instances/inc42/set_ftrace_filter":   "tcp_v4_rcv\n",
		"instances/inc42/set_ftrace_notrace":  "#### no functions disabled ####\n",
		"instances/bad\x1bname/tracing_on":    "0\n",
		"events/enable":                       "0\n",
		"events/sched/enable":                 "0\n",
		"events/sched/sched_switch/enable":    "0\n",
		"events/sched/sched_wakeup/enable":    "0\n",
		"events/syscalls/sys_enter_openat/id": "1\n",
		"events/kprobes/myopen/enable":        "0\n",
		"kprobe_events":                       "p:ftctl/myopen do_sys_openat2\nr8:ftctl_12/ret vfs_read\np:kprobes/b\x1b[31m vfs_write\n",
		"dynamic_events":                      "p:ftctl/myopen do_sys_openat2\nr8:ftctl_12/ret vfs_read\np:kprobes/b\x1b[31m vfs_write\ne:eprobes/sw sched.sched_switch p=$prev_pid\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// completeArgs runs `ftctl __complete ARGS...` and splits its answer into the choices (with
// their descriptions), the directive and the rest of stderr.
func completeArgs(t *testing.T, args ...string) (comps []string, directive int, stderr string) {
	t.Helper()
	code, out, errs := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if _, err := fmt.Sscanf(last, ":%d", &directive); err != nil {
		t.Fatalf("__complete %q: no directive in %q", args, out)
	}
	// cobra always says which directive it ended with; anything else on stderr is a complaint.
	for _, l := range strings.Split(errs, "\n") {
		if l != "" && !strings.HasPrefix(l, "Completion ended with directive:") {
			stderr += l + "\n"
		}
	}
	return lines[:len(lines)-1], directive, stderr
}

const (
	dirDefault = int(cobra.ShellCompDirectiveDefault)
	dirNoSpace = int(cobra.ShellCompDirectiveNoSpace)
	dirNoFile  = int(cobra.ShellCompDirectiveNoFileComp)
	dirDirs    = int(cobra.ShellCompDirectiveFilterDirs)
)

func TestCompletionOnTheCommandLine(t *testing.T) {
	root := completionRoot(t)
	cases := []struct {
		args      []string
		want      []string // exactly these choices ("name\tdescription")
		directive int
	}{
		{[]string{"-B", ""}, []string{"a", "b", "inc42"}, dirNoFile}, // not bad\x1bname: -B refuses it
		{[]string{"-B", "in"}, []string{"inc42"}, dirNoFile},
		{[]string{"--instance", "b"}, []string{"b"}, dirNoFile},
		{[]string{"status", "-B", ""}, []string{"a", "b", "inc42"}, dirNoFile},
		{[]string{"instance", "remove", "a", ""}, []string{"b", "inc42"}, dirNoFile},
		{[]string{"instance", "create", ""}, nil, dirNoFile},
		{[]string{"filter", "set", "vfs_rea"}, []string{"vfs_read", "vfs_readlink", "vfs_readv"}, dirNoFile},
		{[]string{"notrace", "add", "dummy_x"}, []string{"dummy_xmit\t[dummy]"}, dirNoFile},
		{[]string{"functions", "vfs_readl"}, []string{"vfs_readlink"}, dirNoFile},
		{[]string{"filter", "set", "--except", "tcp_v4_do"}, []string{"tcp_v4_do_rcv"}, dirNoFile},
		{[]string{"filter", "set", "uni2char:mod:n"}, []string{"uni2char:mod:nls_utf8"}, dirNoFile},
		{[]string{"filter", "add", "vfs_read:"}, []string{"vfs_read:mod:"}, dirNoFile | dirNoSpace},
		// remove offers what the list holds, in the -B trace array
		{[]string{"filter", "remove", ""}, []string{"char2uni\t[nls_utf8]", "vfs_read", "vfs_write"}, dirNoFile},
		{[]string{"-B", "inc42", "filter", "remove", ""}, []string{"tcp_v4_rcv"}, dirNoFile},
		{[]string{"-B", "inc42", "notrace", "remove", ""}, nil, dirNoFile},
		{[]string{"-B", "ghost", "filter", "remove", ""}, nil, dirNoFile},
		{[]string{"-o", ""}, []string{"text", "json"}, dirNoFile},
		{[]string{"--tracefs", ""}, nil, dirDirs},
		{[]string{"mount", ""}, nil, dirDirs},
		{[]string{"filter", "set", "--from-file", ""}, nil, dirDefault},
		{[]string{"status", ""}, nil, dirNoFile},
		{[]string{"filter", "show", ""}, nil, dirNoFile},
		{[]string{"--lock-timeout", ""}, nil, dirNoFile},
	}
	for _, c := range cases {
		comps, dir, errs := completeArgs(t, append([]string{"--tracefs", root}, c.args...)...)
		if !slices.Equal(comps, c.want) || dir != c.directive || errs != "" {
			t.Errorf("%q: got %q directive %d stderr %q; want %q directive %d", c.args, comps, dir, errs, c.want, c.directive)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "instances/ghost")); err == nil {
		t.Error("completing for a missing instance created it")
	}
}

// snapshot records every file under root with its mode and contents.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		s := info.Mode().String() + " " + info.ModTime().String()
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		out[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Completion runs on every TAB, as whoever types: it must never change tracing state, and say
// nothing when tracefs cannot be had.
func TestCompletionReadsOnlyAndIsSilentWithoutTracefs(t *testing.T) {
	lines := [][]string{
		{"-B", ""}, {"instance", "remove", ""}, {"filter", "set", ""}, {"filter", "set", "vfs_read:mod:"},
		{"notrace", "remove", ""}, {"-B", "new", "filter", "remove", ""}, {"functions", "x"},
		{"filter", "set", "--except", ""},
	}
	root := completionRoot(t)
	before := snapshot(t, root)
	for _, l := range lines {
		if _, _, errs := completeArgs(t, append([]string{"--tracefs", root}, l...)...); errs != "" {
			t.Errorf("%q: stderr %q", l, errs)
		}
	}
	if after := snapshot(t, root); !maps.Equal(before, after) {
		t.Error("completion changed the tracing directory")
	}

	for _, missing := range []string{filepath.Join(t.TempDir(), "none"), "/dev/null"} {
		t.Setenv("FTCTL_TRACEFS", missing)
		for _, l := range lines {
			comps, dir, errs := completeArgs(t, l...)
			if len(comps) != 0 || errs != "" || dir != dirNoFile {
				t.Errorf("tracefs %s, %q: %q directive %d stderr %q; want nothing, silently", missing, l, comps, dir, errs)
			}
		}
	}
}

func keysOf(lines ...string) []filters.Key {
	var out []filters.Key
	for _, l := range lines {
		out = append(out, filters.ParseKey(l))
	}
	return out
}

func TestCompletePattern(t *testing.T) {
	keys := keysOf("vfs_read", "vfs_readv", "vfs_write", "ksys_read", "char2uni [nls_utf8]",
		"uni2char [nls_utf8]", "ext4_read [ext4]", "dup", "dup [mod1]", "twice [ext4]", "twice [ext4]")
	cases := []struct {
		typed     string
		want      []string
		directive cobra.ShellCompDirective
	}{
		{"vfs_r", []string{"vfs_read", "vfs_readv"}, noFiles},
		{"", []string{"char2uni\t[nls_utf8]", "dup", "ext4_read\t[ext4]", "ksys_read", "twice\t[ext4]",
			"uni2char\t[nls_utf8]", "vfs_read", "vfs_readv", "vfs_write"}, noFiles},
		{"dup", []string{"dup"}, noFiles}, // in the core and a module: no one module to show
		{"v?s_r", []string{"vfs_read", "vfs_readv"}, noFiles},
		{"vfs_[!r]", []string{"vfs_write"}, noFiles},
		{"vfs_read", []string{"vfs_read", "vfs_readv"}, noFiles},
		{"nosuch", nil, noFiles},
		{"!vfs", nil, noFiles}, // the engine refuses: removal syntax
		{"1", nil, noFiles},    // the engine refuses: an index
		{"vfs_read:", []string{"vfs_read:mod:"}, noFiles | cobra.ShellCompDirectiveNoSpace},
		{"vfs_read:mo", []string{"vfs_read:mod:"}, noFiles | cobra.ShellCompDirectiveNoSpace},
		{"vfs_read:traceoff", nil, noFiles},
		{"*:mod:", []string{"*:mod:ext4", "*:mod:mod1", "*:mod:nls_utf8"}, noFiles},
		{":mod:n", []string{":mod:nls_utf8"}, noFiles},
		{"char*:mod:", []string{"char*:mod:nls_utf8"}, noFiles},
		{"*_read:mod:", []string{"*_read:mod:ext4"}, noFiles},
		{"*_read:mod:!", []string{"*_read:mod:!ext4", "*_read:mod:!mod1", "*_read:mod:!nls_utf8"}, noFiles},
		{"!x:mod:", nil, noFiles},
	}
	for _, c := range cases {
		got, dir := completePattern(slices.Values(keys), c.typed)
		if !slices.Equal(got, c.want) || dir != c.directive {
			t.Errorf("%q: got %q directive %d, want %q directive %d", c.typed, got, dir, c.want, c.directive)
		}
	}
}

func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// Past the cap, the choices keep the common prefix of everything that matches: a shell that
// inserts the common prefix of the choices must not narrow the word to names it was not shown.
func TestCompletePatternCapKeepsTheCommonPrefix(t *testing.T) {
	var keys []filters.Key
	for i := range 3 * maxCompletions {
		keys = append(keys, filters.Key{Name: fmt.Sprintf("sys_aa%04d", i)})
	}
	keys = append(keys, filters.Key{Name: "sys_b"}, filters.Key{Name: "other"})
	got, _ := completePattern(slices.Values(keys), "sys_")
	if len(got) != maxCompletions+1 {
		t.Fatalf("%d choices, want %d and a note", len(got), maxCompletions)
	}
	note := got[len(got)-1]
	choices := got[:len(got)-1]
	if want := fmt.Sprintf("_activeHelp_ %d names shown; %d functions match", maxCompletions, 3*maxCompletions+1); !strings.HasPrefix(note, want) {
		t.Errorf("note %q, want %q...", note, want)
	}
	if !slices.IsSorted(choices) || choices[0] != "sys_aa0000" || choices[len(choices)-1] != "sys_b" {
		t.Errorf("choices %q ... %q", choices[0], choices[len(choices)-1])
	}
	lcp := choices[0]
	for _, c := range choices {
		lcp = commonPrefix(lcp, c)
	}
	if lcp != "sys_" {
		t.Errorf("the choices share %q; everything that matches shares only %q", lcp, "sys_")
	}
}

// Around the cap, in any order, with names shared by several functions: every name is offered
// while they fit, and otherwise the first ones and the last, with the note.
func TestCompletePatternAroundTheCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, distinct := range []int{1, maxCompletions - 1, maxCompletions, maxCompletions + 1, 5 * maxCompletions} {
		var names []string
		for i := range distinct {
			names = append(names, fmt.Sprintf("f%05d", i))
		}
		var keys []filters.Key
		for _, n := range names {
			keys = append(keys, filters.Key{Name: n}, filters.Key{Name: n, Module: "m"}) // two functions each
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })

		got, _ := completePattern(slices.Values(keys), "f")
		want := names
		if distinct > maxCompletions {
			want = append(slices.Clone(names[:maxCompletions-1]), names[distinct-1])
			want = append(want, fmt.Sprintf("_activeHelp_ %d names shown; %d functions match: type more of the name", maxCompletions, 2*distinct))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d names: got %d choices %q ... %q, want %d", distinct, len(got), got[0], got[len(got)-1], len(want))
		}
	}
}

func TestCompleteEventNames(t *testing.T) {
	root := completionRoot(t)
	g := &Globals{TracefsDir: root}
	cases := []struct {
		typed     string
		want      []string
		directive cobra.ShellCompDirective
	}{
		{"", []string{"kprobes:", "sched:", "syscalls:"}, noFiles | cobra.ShellCompDirectiveNoSpace},
		{"sc", []string{"sched:"}, noFiles | cobra.ShellCompDirectiveNoSpace},
		{"sched:", []string{"sched:sched_switch", "sched:sched_wakeup"}, noFiles},
		{"sched:sched_w", []string{"sched:sched_wakeup"}, noFiles},
		{"syscalls:", []string{"syscalls:sys_enter_openat"}, noFiles},
		{"nosuch:", nil, noFiles},
		{"../instances/a:", nil, noFiles},
		{"..:", nil, noFiles},
	}
	for _, c := range cases {
		got, dir := completeEventNames(g)(nil, nil, c.typed)
		if !slices.Equal(got, c.want) || dir != c.directive {
			t.Errorf("%q: got %q directive %d, want %q directive %d", c.typed, got, dir, c.want, c.directive)
		}
	}
}

func TestCompleteProbeNames(t *testing.T) {
	root := completionRoot(t)
	g := &Globals{TracefsDir: root}
	cases := []struct {
		typed string
		want  []string
	}{
		// kprobes/b\x1b[31m cannot be typed back: left out
		{"", []string{"ftctl/myopen\tp:ftctl/myopen do_sys_openat2", "ftctl_12/ret\tr8:ftctl_12/ret vfs_read"}},
		{"ftctl_", []string{"ftctl_12/ret\tr8:ftctl_12/ret vfs_read"}},
		{"kprobes/", nil},
	}
	for _, c := range cases {
		got, dir := completeProbeNames(g)(nil, nil, c.typed)
		if !slices.Equal(got, c.want) || dir != noFiles {
			t.Errorf("%q: got %q directive %d, want %q", c.typed, got, dir, c.want)
		}
	}
	os.Remove(filepath.Join(root, "kprobe_events"))
	if got, dir := completeProbeNames(g)(nil, nil, ""); got != nil || dir != noFiles {
		t.Errorf("without kprobe_events: %q %d", got, dir)
	}
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestBashCompletion sources the generated bash script in a real bash and presses TAB: the
// script runs `ftctl __complete` (this test binary, linked as ftctl on PATH) against a fake
// tracing directory given by FTCTL_TRACEFS.
func TestBashCompletion(t *testing.T) {
	bash := shellFor(t, "bash")
	bin := linkFtctl(t)
	var script bytes.Buffer
	if err := NewRootCmd(&Globals{}).GenBashCompletionV2(&script, true); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(bin, "ftctl.bash")
	if err := os.WriteFile(scriptPath, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	root := completionRoot(t)

	// The script needs bash-completion's _get_comp_words_by_ref; where that package is not
	// installed, a stand-in serves the words set by hand below (split as bash-completion
	// would with -n =:, keeping ':' and '=' inside words).
	const wordsByRef = `
if [ -r /usr/share/bash-completion/bash_completion ]; then
	. /usr/share/bash-completion/bash_completion
fi
if ! declare -F _get_comp_words_by_ref >/dev/null; then
	_get_comp_words_by_ref() {
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
	}
fi
`
	cases := []struct {
		line string // as typed before TAB
		want []string
	}{
		{"ftctl -B ", []string{"a", "b", "inc42"}},
		{"ftctl -B in", []string{"inc42"}},
		{"ftctl --tracefs " + root + " -B b", []string{"b"}},
		{"ftctl instance remove inc42 ", []string{"a", "b"}},
		{"ftctl filter set vfs_rea", []string{"vfs_read", "vfs_readlink", "vfs_readv"}},
		{"ftctl -B inc42 filter remove ", []string{"tcp_v4_rcv"}},
		{"ftctl functions tcp_v4_do_r", []string{"tcp_v4_do_rcv"}},
		// a single choice is inserted without its description
		{"ftctl notrace add dummy_x", []string{"dummy_xmit"}},
		// after a ':' (a word break for bash) the choices are what follows it
		{"ftctl filter set char2uni:mod:nl", []string{"nls_utf8"}},
		{"ftctl filter ", []string{"add", "clear", "remove", "set", "show"}},
	}
	for _, c := range cases {
		words := strings.Split(c.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, shellQuote(w))
		}
		prog := wordsByRef + ". " + shellQuote(scriptPath) + "\n" +
			"COMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
			fmt.Sprintf("COMP_CWORD=%d\nCOMP_LINE=%s\nCOMP_POINT=%d\nCOMP_TYPE=9\n", len(words)-1, shellQuote(c.line), len(c.line)) +
			"__start_ftctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		sh := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
		sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FTCTL_TRACEFS="+root, "COLUMNS=200")
		var stderr bytes.Buffer
		sh.Stderr = &stderr
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.line, err, stderr.String())
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if l != "" {
				// Several choices come with their descriptions laid out: "char2uni  ([nls_utf8])".
				got = append(got, strings.Fields(l)[0])
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q TAB: got %q, want %q (stderr %q)", c.line, got, c.want, stderr.String())
		}
	}
}

// shellFor finds a shell for a completion test. Where it is missing the test skips, unless
// FTCTL_REQUIRE_SHELLS is set (CI installs bash, zsh and fish and sets it: there, a missing
// shell fails instead of passing unseen).
func shellFor(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("FTCTL_REQUIRE_SHELLS") != "" {
			t.Fatalf("%s is required (FTCTL_REQUIRE_SHELLS) and missing: %v", name, err)
		}
		t.Skipf("no %s on this machine", name)
	}
	return p
}

// linkFtctl links this test binary as ftctl in a new directory, which it returns (TestMain runs
// it as ftctl when so named).
func linkFtctl(t *testing.T) (bin string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin = t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "ftctl")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// completionEnv links this test binary as ftctl on PATH and returns the directory and the
// environment a shell completes with.
func completionEnv(t *testing.T) (bin string, env []string) {
	t.Helper()
	bin = linkFtctl(t)
	root := completionRoot(t)
	return bin, append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FTCTL_TRACEFS="+root, "COLUMNS=200")
}

// What the zsh and fish scripts offer, line by line (a TAB in the middle of the line).
var shellCompletionCases = []struct {
	line string
	want []string
}{
	{"ftctl -B ", []string{"a", "b", "inc42"}},
	{"ftctl -B in", []string{"inc42"}},
	{"ftctl instance remove inc42 ", []string{"a", "b"}},
	{"ftctl filter set vfs_rea", []string{"vfs_read", "vfs_readlink", "vfs_readv"}},
	{"ftctl -B inc42 filter remove ", []string{"tcp_v4_rcv"}},
	{"ftctl notrace add dummy_x", []string{"dummy_xmit"}},
	{"ftctl filter set char2uni:mod:nl", []string{"char2uni:mod:nls_utf8"}},
	{"ftctl filter ", []string{"add", "clear", "remove", "set", "show"}},
}

// TestZshCompletion runs the generated zsh script's completion function in a real zsh, with
// zsh's completion builtins replaced by ones that print what they are given: the script's own
// parsing of `ftctl __complete` is what is tested.
func TestZshCompletion(t *testing.T) {
	zsh := shellFor(t, "zsh")
	bin, env := completionEnv(t)
	var script bytes.Buffer
	if err := NewRootCmd(&Globals{}).GenZshCompletion(&script); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(bin, "_ftctl")
	if err := os.WriteFile(scriptPath, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const stubs = `
compdef() { :; }
_describe() { local a; for a; do if [[ $a == completions ]]; then print -rl -- "${completions[@]}"; return 0; fi; done; return 1; }
_arguments() { print -r -- "ARGUMENTS $*"; }
compadd() { print -r -- "COMPADD $*"; }
`
	for _, c := range shellCompletionCases {
		words := strings.Split(c.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, shellQuote(w))
		}
		prog := stubs + "source " + shellQuote(scriptPath) + "\nwords=(" + strings.Join(quoted, " ") + ")\n" +
			fmt.Sprintf("CURRENT=%d\n_ftctl\n", len(words))
		sh := exec.Command(zsh, "-f", "-c", prog)
		sh.Env = env
		var stderr bytes.Buffer
		sh.Stderr = &stderr
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.line, err, stderr.String())
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			// "name:description", a ':' in the name escaped as "\:"
			name := l
			for i := 0; i < len(l); i++ {
				if l[i] == '\\' {
					i++
				} else if l[i] == ':' {
					name = l[:i]
					break
				}
			}
			if name != "" && !strings.HasPrefix(l, "ARGUMENTS") && !strings.HasPrefix(l, "COMPADD") {
				got = append(got, strings.ReplaceAll(name, `\`, ""))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q TAB: got %q, want %q (stdout %q, stderr %q)", c.line, got, c.want, out, stderr.String())
		}
	}
}

// TestFishCompletion asks a real fish what it would offer (complete -C) after sourcing the
// generated fish script.
func TestFishCompletion(t *testing.T) {
	fish := shellFor(t, "fish")
	bin, env := completionEnv(t)
	var script bytes.Buffer
	if err := NewRootCmd(&Globals{}).GenFishCompletion(&script, true); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(bin, "ftctl.fish")
	if err := os.WriteFile(scriptPath, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range shellCompletionCases {
		sh := exec.Command(fish, "--no-config", "-c", "source "+shellQuote(scriptPath)+"; complete -C "+shellQuote(c.line))
		sh.Env = append(env, "HOME="+bin, "XDG_CONFIG_HOME="+bin, "XDG_DATA_HOME="+bin)
		var stderr bytes.Buffer
		sh.Stderr = &stderr
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.line, err, stderr.String())
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if name, _, _ := strings.Cut(l, "\t"); name != "" {
				got = append(got, name)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q TAB: got %q, want %q (stderr %q)", c.line, got, c.want, stderr.String())
		}
	}
}

// BenchmarkCompleteFunctionNames completes over 70,000 names (the 6.12 index and as many module
// functions again), from reading available_filter_functions to the capped list.
func BenchmarkCompleteFunctionNames(b *testing.B) {
	root := b.TempDir()
	text, err := fixture.Read("6.12", "available_filter_functions")
	if err != nil {
		b.Fatal(err)
	}
	var more strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if i >= 28000 {
			break
		}
		fmt.Fprintf(&more, "%s_m [bench%d]\n", strings.Fields(l)[0], i%50)
	}
	if err := os.WriteFile(filepath.Join(root, "available_filter_functions"), []byte(text+more.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	g := &Globals{TracefsDir: root}
	f := completeFunctionNames(g)
	for _, typed := range []string{"", "vfs_", "tcp_v4_do_rcv"} {
		b.Run(fmt.Sprintf("%q", typed), func(b *testing.B) {
			for b.Loop() {
				if comps, _ := f(nil, nil, typed); len(comps) == 0 {
					b.Fatal("no completions")
				}
			}
		})
	}
}

// A probe definition completes its function from available_filter_functions, then argument
// names and members from BTF (FTCTL_BTF: the fixture's), as words or inside one quoted word.
func TestCompleteProbeDefinition(t *testing.T) {
	root := completionRoot(t)
	t.Setenv("FTCTL_BTF", fixture.BTFDir(t))
	readme, err := fixture.Read("6.12", "README") // BTF names and members announced
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "README"), []byte(readme), 0o644)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"probe", "add", "p:x", "vfs_rea"}, []string{"vfs_read", "vfs_readlink", "vfs_readv"}},
		{[]string{"probe", "add", "p:x", "vfs_read", "co"}, []string{"count"}},
		{[]string{"probe", "add", "p:x", "vfs_read", "count", "f=file->f_p"}, []string{"f=file->f_path", "f=file->f_pos"}},
		{[]string{"probe", "add", "p:x vfs_read file->f_inode->"}, []string{"p:x vfs_read file->f_inode->i_ino"}},
		{[]string{"trace", "-p", "r:x vfs_read $re"}, []string{"r:x vfs_read $retval"}},
		{[]string{"trace", "-p", "p:x vfs_read b"}, []string{"p:x vfs_read buf"}},
	} {
		comps, dir, errs := completeArgs(t, append([]string{"--tracefs", root}, c.args...)...)
		if !slices.Equal(comps, c.want) || dir != dirNoFile || errs != "" {
			t.Errorf("%q: got %q directive %d stderr %q; want %q", c.args, comps, dir, errs, c.want)
		}
	}
}
