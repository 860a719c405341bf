package probes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/internal/kstr"
)

// Uprobes (kernel/trace/trace_uprobe.c): `p|r[:[GRP/]EVENT] PATH:OFFSET[%return][(REF_CTR)]`
// in uprobe_events, where OFFSET is a file offset. ftctl also takes PATH:SYMBOL[+OFFS] and
// resolves the symbol from the ELF file (UserSpace), writing the kernel's PATH:0xOFFSET form.

// UprobeGroup is the kernel's group for uprobes defined without one (UPROBE_EVENT_SYSTEM).
const UprobeGroup = "uprobes"

// UprobePlace is a uprobe's probed place.
type UprobePlace struct {
	Path   string // as written
	Symbol string // "" when the place is a file offset
	SymOff uint64 // SYMBOL+SYMOFF
	// Offset is the file offset: as written, or resolved from Symbol (Resolved).
	Offset   uint64
	Resolved bool
	Return   bool    // PATH:OFFSET%return
	RefCtr   *uint64 // (REF_CTR): the semaphore's file offset (SDT probes), nil when absent
	// What resolving found (when the file is a readable ELF file).
	AbsPath string   // the path written to the kernel: absolute, as the kernel resolves it
	Segment *Segment // the PT_LOAD segment holding Offset
	Func    *ELFFunc // the symbol's function
	Go      bool     // a Go binary
}

// String is the place as written: PATH:SYMBOL[+OFFS] or PATH:0xOFFSET, with its suffixes.
func (u *UprobePlace) String() string {
	s := u.Path + ":"
	if u.Symbol != "" {
		s += u.Symbol
		if u.SymOff != 0 {
			s += "+" + strconv.FormatUint(u.SymOff, 10)
		}
	} else {
		s += "0x" + strconv.FormatUint(u.Offset, 16)
	}
	return s + u.suffix()
}

func (u *UprobePlace) suffix() string {
	s := ""
	if u.Return {
		s += "%return"
	}
	if u.RefCtr != nil {
		s += "(0x" + strconv.FormatUint(*u.RefCtr, 16) + ")"
	}
	return s
}

// kernelText is the place as uprobe_events takes it: PATH:0xOFFSET, the path absolute once
// resolved. An unresolved symbol stays as typed (Manager.Add resolves it before writing).
func (u *UprobePlace) kernelText() string {
	if u.Symbol != "" && !u.Resolved {
		return u.String()
	}
	p := u.Path
	if u.AbsPath != "" {
		p = u.AbsPath
	}
	return p + ":0x" + strconv.FormatUint(u.Offset, 16) + u.suffix()
}

// IsUprobe reports a uprobe definition.
func (d *Definition) IsUprobe() bool { return d.Uprobe != nil }

// isUprobePlace is the kernel's test (trace_uprobe.c): a '/' in the place, and a ':' after
// which the offset (or, for ftctl, the symbol) follows.
func isUprobePlace(place string) bool {
	return strings.Contains(place, "/") && strings.Contains(place, ":")
}

// UserSpace resolves uprobe places against ELF files; it reads each file once. Parser.User
// leaves it nil where no IO may run (the console's editor at each key): the place is then
// checked as grammar only and resolved when the probe is added.
type UserSpace struct {
	open  func(string) (*Binary, error)
	files map[string]binaryOrErr
}

type binaryOrErr struct {
	b   *Binary
	err error
}

// NewUserSpace reads ELF files from the file system.
func NewUserSpace() *UserSpace { return &UserSpace{open: OpenBinary} }

// Binary reads path once.
func (u *UserSpace) Binary(path string) (*Binary, error) {
	if u.files == nil {
		u.files = map[string]binaryOrErr{}
	}
	if r, ok := u.files[path]; ok {
		return r.b, r.err
	}
	open := u.open
	if open == nil {
		open = OpenBinary
	}
	b, err := open(path)
	u.files[path] = binaryOrErr{b, err}
	return b, err
}

// goReturnReason is why ftctl refuses return probes in Go binaries: a uretprobe replaces the
// return address on the stack with a trampoline's, and the Go runtime copies goroutine stacks
// when they grow (and walks them for tracebacks and the GC), finding an address it does not
// know: the program crashes ("unexpected return pc"). Entry probes are safe.
const goReturnReason = "return probes on Go functions are unsafe: the Go runtime moves goroutine stacks and finds the uretprobe's return address there (the program can crash)"

// parseUprobePlace parses argv[1] of a uprobe, PATH:OFFSET or PATH:SYMBOL[+OFFS], with the
// suffixes %return and (REF_CTR), in the kernel's order: OFFSET%return(REF_CTR).
func (st *state) parseUprobePlace() error {
	d := st.d
	st.tok = 1
	place := st.text(1)
	colon := strings.LastIndexByte(place, ':') // a path may hold ':' too
	u := &UprobePlace{Path: place[:colon]}
	d.Uprobe = u
	st.fnDone = true // no BTF for user space: proto() knows nothing
	if d.MaxActive != 0 {
		// __trace_uprobe_create() reads an event name only when argv[0][1] is ':' (6.1 and
		// 6.12 alike): after r<N> it drops the N, the group and the event, and names the
		// event p_FILE_0xOFFSET in group uprobes (KernelName).
		e := st.errAt(0, 1, "uprobes take no maxactive")
		e.Hint = "the kernel ignores r<N> on a uprobe and the name after it: it names the event itself (" +
			UprobeGroup + "/p_FILE_0xOFFSET); write r:GROUP/EVENT"
		if err := st.unlessForced(e, "the kernel ignores the maxactive of "+st.text(0)+
			" on a uprobe and the name after it: it names the event itself, in group "+UprobeGroup); err != nil {
			return err
		}
	}
	if u.Path == "" {
		return st.err(0, "Failed to find the given file")
	}
	rest, restOff := place[colon+1:], colon+1
	if rest == "" {
		return st.err(restOff, "Invalid uprobe offset")
	}
	// (REF_CTR) at the end: a number in parentheses (a Go method's name has parentheses too).
	if strings.HasSuffix(rest, ")") {
		if i := strings.LastIndexByte(rest, '('); i >= 0 {
			if v, ok := kstr.Strtoull(rest[i+1 : len(rest)-1]); ok {
				u.RefCtr = &v
				rest = rest[:i]
			} else if kstr.IsDigit(rest[0]) {
				return st.err(restOff+i+1, "Invalid reference counter offset")
			}
		}
	} else if i := strings.IndexByte(rest, '('); i >= 0 && kstr.IsDigit(rest[0]) {
		if !strings.Contains(rest[i:], ")") {
			return st.err(restOff+len(rest), "Reference counter brace is not closed")
		}
		return st.err(restOff+strings.IndexByte(rest, ')')+1, "Reference counter has wrong suffix")
	}
	if i := strings.IndexByte(rest, '%'); i >= 0 {
		if rest[i:] != "%return" {
			return st.err(restOff+i, "Invalid probed address suffix")
		}
		u.Return = true
		st.ret = true
		rest = rest[:i]
	}
	if d.Kind == Kretprobe {
		st.ret = true
	}
	if rest == "" {
		return st.err(restOff, "Invalid uprobe offset")
	}
	if kstr.IsDigit(rest[0]) {
		v, ok := kstr.Strtoull(rest)
		if !ok {
			return st.err(restOff, "Invalid uprobe offset")
		}
		u.Offset = v
	} else {
		sym := rest
		if i := strings.LastIndexByte(rest, '+'); i > 0 {
			v, ok := kstr.Strtoull(rest[i+1:])
			if !ok {
				return st.err(restOff+i+1, "Invalid uprobe offset")
			}
			sym, u.SymOff = rest[:i], v
		}
		if sym == "" || strings.Contains(sym, "+") || strings.ContainsAny(sym, "%()") && !goName(sym) {
			return st.err(restOff, "Invalid symbol name")
		}
		u.Symbol = sym
	}
	if st.p.User != nil {
		return st.resolveUprobe(st.p.User, restOff)
	}
	return nil
}

// goName: parentheses belong to a Go method's name ("main.(*T).M").
func goName(s string) bool {
	return strings.Contains(s, ".(") && !strings.Contains(s, "%")
}

// ResolveUprobe resolves an unresolved uprobe symbol (a definition the console's editor parsed
// without IO) against the ELF file, with the same checks as Parser.User; nothing to do for
// other definitions. Errors are *SyntaxError under the definition's text.
func (d *Definition) ResolveUprobe(u *UserSpace) error {
	if d.Uprobe == nil || d.Uprobe.Resolved || d.Uprobe.AbsPath != "" {
		return nil
	}
	st := &state{d: d, tok: 1, ret: d.IsReturn() || d.Uprobe.Return}
	place := st.text(1)
	return st.resolveUprobe(u, strings.LastIndexByte(place, ':')+1)
}

// resolveUprobe checks the file and resolves the symbol: what the kernel would refuse (no such
// file, not a regular file: trace_uprobe.c kern_path and d_is_reg), what it cannot know (no
// such symbol, several, an offset past the function, a segment that is not executable), and a
// return probe in a Go binary (unless Force).
func (st *state) resolveUprobe(us *UserSpace, restOff int) error {
	u := st.d.Uprobe
	abs, err := filepath.Abs(u.Path)
	if err != nil {
		return st.err(0, "Failed to find the given file")
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e := st.err(0, "Failed to find the given file")
		e.Hint = "no file " + u.Path
		return e
	case err != nil:
		e := st.err(0, "Failed to find the given file")
		e.Hint = err.Error()
		return e
	case !fi.Mode().IsRegular():
		return st.err(0, "Not a regular file")
	}
	u.AbsPath = abs
	b, berr := us.Binary(abs)
	if u.Symbol == "" {
		// The kernel takes any offset in any regular file; what the ELF says is shown, not enforced.
		if berr == nil {
			u.Go = b.Go
			if s, ok := b.SegmentAt(u.Offset); ok {
				u.Segment = &s
			}
			if f, delta, ok := b.SymbolAt(u.Offset); ok && delta == 0 {
				u.Func = &f
			}
		}
		u.Resolved = true
		return st.goReturn()
	}
	if berr != nil {
		e := st.err(restOff, "Cannot resolve the symbol")
		e.Hint = fmt.Sprintf("reading %s: %v; give the place as PATH:0xOFFSET", u.Path, berr)
		return e
	}
	u.Go = b.Go
	fns := b.Lookup(u.Symbol)
	switch {
	case len(fns) == 0:
		e := st.err(restOff, "No such function symbol in the file")
		e.Hint = "the ELF symbol tables of " + u.Path + " list no function " + u.Symbol
		if names := closeNames(strings.Join(b.Names(), "\n"), u.Symbol, 5); len(names) > 0 {
			e.Hint += "; did you mean " + strings.Join(names, ", ") + "?"
		}
		if len(b.Funcs) == 0 {
			e.Hint += " (the file has no function symbols: stripped? give PATH:0xOFFSET)"
		}
		return e
	case len(fns) > 1:
		var offs []string
		for _, f := range fns {
			offs = append(offs, "0x"+strconv.FormatUint(f.Offset, 16))
		}
		e := st.err(restOff, "The symbol is not unique")
		e.Hint = fmt.Sprintf("%s has %d functions called %s, at file offsets %s: probe one as PATH:0xOFFSET", u.Path, len(fns), u.Symbol, strings.Join(offs, ", "))
		return e
	}
	f := fns[0]
	if u.SymOff != 0 && f.Size != 0 && u.SymOff >= f.Size {
		e := st.err(restOff+len(u.Symbol)+1, "Offset is past the end of the function")
		e.Hint = fmt.Sprintf("%s is %d bytes long", u.Symbol, f.Size)
		return e
	}
	if st.ret && u.SymOff != 0 {
		return st.err(restOff+len(u.Symbol)+1, "Retprobe address must be an function entry")
	}
	seg, _ := b.Segment(f.Segment)
	if !seg.Executable() {
		e := st.err(restOff, "The symbol is not in an executable segment")
		e.Hint = fmt.Sprintf("%s lies in %s, which the loader does not map executable", u.Symbol, seg)
		return e
	}
	u.Offset, u.Segment, u.Func, u.Resolved = f.Offset+u.SymOff, &seg, &f, true
	return st.goReturn()
}

func (st *state) goReturn() error {
	if st.d.Uprobe.Go && st.ret {
		e := st.errAt(0, 0, "return probe on a Go binary")
		e.Hint = goReturnReason + "; --force defines it anyway (safe only for a function that cannot grow its stack)"
		return st.unlessForced(e, goReturnReason)
	}
	return nil
}

// unlessForced is e, or nil with note kept in Definition.Forced when the definition is
// parsed with Parser.Force: for what ftctl refuses although the kernel may take it.
func (st *state) unlessForced(e *SyntaxError, note string) error {
	if !st.d.force {
		if !strings.Contains(e.Hint, "--force") {
			e.Hint += "; --force passes it to the kernel"
		}
		return e
	}
	if !slices.Contains(st.d.Forced, note) {
		st.d.Forced = append(st.d.Forced, note)
	}
	return nil
}

// uprobeFetch handles the fetch arguments that differ for uprobes (trace_probe.c
// parse_probe_arg with TPARG_FL_USER): @+OFFSET (a file offset, uprobes only), @SYMBOL (refused:
// no kernel symbols), $argN and BTF names (no BTF for user space). done is false for the
// forms both kinds share.
func (st *state) uprobeFetch(s string, off int) (f *Fetch, err error, done bool) {
	switch {
	case strings.HasPrefix(s, "@+"):
		if _, ok := kstr.Strtol(s[2:]); !ok {
			return nil, st.err(off, "Invalid file offset value"), true
		}
		return &Fetch{Kind: FetchFileOffset, Text: s[2:]}, nil, true
	case strings.HasPrefix(s, "@") && (len(s) == 1 || !kstr.IsDigit(s[1])):
		e := st.err(off, "Symbol is not available with uprobe")
		e.Hint = "a uprobe reads user memory: @ADDR, @+FILE_OFFSET, or +OFFS(FETCHARG)"
		return nil, e, true
	case strings.HasPrefix(s, "$stack") && len(s) > 6 && kstr.IsDigit(s[6]):
		// PARAM_MAX_STACK bounds kernel stacks only (parse_probe_vars: TPARG_FL_KERNEL); a
		// user stack's $stackN is any unsigned long (seen: 6.1 and 6.12 take $stack9999).
		if _, err := strconv.ParseUint(s[6:], 10, 64); err != nil {
			return nil, st.err(off, "Invalid $-variable specified"), true
		}
		return &Fetch{Kind: FetchStack, Text: s[6:]}, nil, true
	case strings.HasPrefix(s, "$arg"):
		msg := "Invalid $-variable specified"
		if st.p.Features.BTFArgs {
			msg = "$arg* can be used only on function entry or exit" // NOFENTRY_ARGS (seen: 6.12)
		}
		e := st.err(off, msg)
		e.Hint = "$argN is for kernel functions; on x86-64 a C function's arguments are in %di %si %dx %cx %r8 %r9"
		return nil, e, true
	case strings.HasPrefix(s, "$retval") && s != "$retval":
		// Since the BTF field access series (6.6, "tracing/probes: Support BTF field access
		// from $retval", which also put <argname>[->field...] in the README), parse_probe_vars
		// takes any "$retval..." of a uprobe (no TPARG_FL_KERNEL) as $retval itself: the
		// fields are dropped, though the kernel lists the argument as written. Before it,
		// only "$retval" itself.
		e := st.err(off, "Invalid $-variable specified")
		e.Hint = "user space has no BTF: $retval has no fields; dereference it, e.g. +0($retval):u32"
		if !st.p.Features.BTFFields {
			e.Hint += " (this kernel takes $retval alone, with --force too: its tracefs README announces no ->field)"
			return nil, e, true // this kernel refuses it too
		}
		if !st.ret {
			return nil, st.err(off, "$retval is not available on probe"), true // RETVAL_ON_PROBE, first
		}
		e.Hint += " (this kernel would record $retval itself and ignore " + strconv.Quote(s[len("$retval"):]) + ")"
		if err := st.unlessForced(e, "the kernel records $retval itself for "+s+" on a uprobe: user space has no BTF, so it ignores "+
			strconv.Quote(s[len("$retval"):])+", and lists the argument as written"); err != nil {
			return nil, err, true
		}
		return &Fetch{Kind: FetchRetval, Text: s[len("$retval"):]}, nil, true
	case s != "" && (kstr.IsAlpha(s[0]) || s[0] == '_'):
		msg := "Invalid fetch argument"
		if st.p.Features.BTFArgs {
			msg = "BTF is not available or not supported"
		}
		e := st.err(off, msg)
		e.Hint = "user space has no BTF: name an argument NAME=FETCHARG (a register, $stackN, memory)"
		return nil, e, true
	}
	return nil, nil, false
}

// uprobeType refuses the types that name kernel symbols: a uprobe's values are user addresses,
// which no kernel symbol holds. Kernels with "tracing/probes: Reject symbol/symstr type for
// uprobe" (6.2; 6.12 here) refuse them, "Unknown type is specified"; Debian's 6.1 takes them
// and prints the address as a number (%pS of an address kallsyms does not know), and no
// tracefs file tells the two apart.
func (st *state) uprobeType(typ string, pos int) error {
	if typ == "symbol" || typ == "symstr" {
		e := st.err(pos, "Unknown type is specified")
		e.Hint = "the " + typ + " type names kernel symbols, and a uprobe's values are user addresses: use x64"
		return st.unlessForced(e, "the "+typ+" type of a uprobe looks a user address up among kernel symbols: "+
			"the kernel prints the bare address, where it takes it at all")
	}
	return nil
}

// KernelName is where the kernel puts the event of a definition whose group and event it
// ignores: r<N> on a uprobe (parseUprobePlace; passed only with Parser.Force), which
// __trace_uprobe_create() names "p_" + the file's base name up to its first '.', '-' or '_'
// + "_0x" + the offset, in group uprobes. ok is false for every other definition, whose
// group and event are the kernel's as written. The place must be resolved (Manager.Add).
func (d *Definition) KernelName() (group, event string, ok bool) {
	if d.Uprobe == nil || d.MaxActive == 0 {
		return "", "", false
	}
	path := d.Uprobe.Path
	if d.Uprobe.AbsPath != "" {
		path = d.Uprobe.AbsPath
	}
	tail := path[strings.LastIndexByte(path, '/')+1:] // kbasename()
	if i := strings.IndexAny(tail, ".-_"); i >= 0 {
		tail = tail[:i]
	}
	event = "p_" + tail + "_0x" + strconv.FormatUint(d.Uprobe.Offset, 16)
	if len(event) > MaxEventNameLen-1 { // snprintf() into MAX_EVENT_NAME_LEN bytes
		event = event[:MaxEventNameLen-1]
	}
	return UprobeGroup, event, true
}
