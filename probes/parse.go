package probes

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/ftctl/ftctl/internal/kstr"
	"github.com/ftctl/ftctl/tracefs"
)

// Kind is the type of a dynamic event definition: p, r, f, t, e, or - for a removal.
type Kind byte

const (
	Kprobe    Kind = 'p' // p[:[GRP/]EVENT] PLACE [ARGS]
	Kretprobe Kind = 'r' // r[MAXACTIVE][:[GRP/]EVENT] PLACE [ARGS], or p ... SYM%return
	Delete    Kind = '-' // -:[GRP/]EVENT
)

// Limits of kernel/trace/trace_probe.h.
const (
	MaxEventNameLen = 64   // MAX_EVENT_NAME_LEN (group and event)
	MaxArgNameLen   = 32   // MAX_ARG_NAME_LEN
	MaxArgStrLen    = 63   // MAX_ARGSTR_LEN: one argument's text after NAME=
	MaxArrayLen     = 64   // MAX_ARRAY_LEN
	MaxArgs         = 128  // MAX_TRACE_ARGS: 6.12 refuses more; 6.1 takes the line and drops the rest
	MaxMaxActive    = 4096 // KRETPROBE_MAXACTIVE_MAX
	fetchInsnMax    = 16   // FETCH_INSN_MAX
	// MaxLineLen: kernel/trace/trace_dynevent.c trace_parse_run_command() reads a write in
	// chunks of WRITE_BUFSIZE-1 (4095) bytes and needs a line's '\n' inside its chunk: 4094
	// bytes before the newline (seen on 6.1 and 6.12: 4094 taken, 4095 refused; the kernel's
	// warning says "less than 4094").
	MaxLineLen = 4094
)

// Definition is one parsed kprobe_events line.
type Definition struct {
	Kind      Kind
	MaxActive uint32 // r<N>: kretprobe instances; 0 = the kernel's default
	Group     string // "" when omitted (the kernel's default is "kprobes")
	Event     string // "" when omitted (the kernel names it)
	// The probed place: [Module:]Symbol[+Offset], or Addr (a kernel address).
	Module string
	Symbol string
	Offset int64
	IsAddr bool
	Addr   uint64
	// PercentReturn: the place was written SYM%return (a return probe from "p" or "f"), or
	// an fprobe fetches $retval (the kernel makes it an exit probe).
	PercentReturn bool
	// Uprobe is the place of a uprobe (PATH:OFFSET or PATH:SYMBOL): uprobe.go.
	Uprobe *UprobePlace
	Args   []Arg
	// An event probe's attached event (SYSTEM.EVENT) and its "if FILTER" ("" for none),
	// the filter's words joined by single spaces as the kernel joins them.
	AttachSystem, AttachEvent string
	Filter                    string

	// Forced says what Parser.Force let through, one sentence each, for a warning.
	Forced []string

	argEnd int  // tokens[2:argEnd] are the arguments (an event probe's "if" ends them); 0: all
	force  bool // parsed with Parser.Force (ResolveUprobe checks a Go return probe later)

	src    string
	tokens []span // argv as the kernel's argv_split() sees it
	head   headSpans
}

// Arg is one fetch argument: [NAME=]FETCHARG[:TYPE].
type Arg struct {
	Name  string // as written after NAME=, "" when omitted
	Fetch Fetch
	Type  string // "" (the default, u64), "u32", "string", "b4@3/32", "%pd", ...
	Count uint32 // array size of TYPE[N], 0 when not an array
}

// FetchKind is the form of a FETCHARG.
type FetchKind int

const (
	FetchReg        FetchKind = iota + 1 // %REG
	FetchStackPtr                        // $stack
	FetchStack                           // $stackN
	FetchRetval                          // $retval, or $retval->field (BTF)
	FetchComm                            // $comm
	FetchArgN                            // $argN
	FetchArgs                            // $arg* (every parameter, BTF)
	FetchAddr                            // @ADDR
	FetchSymbol                          // @SYM[+|-OFFS]
	FetchDeref                           // +|-[u]OFFS(FETCHARG)
	FetchImm                             // \IMM
	FetchImmString                       // \"STRING"
	FetchBTF                             // NAME[->field|.field]... (BTF)
	FetchField                           // $FIELD: a field of an event probe's attached event
	FetchFileOffset                      // @+OFFSET: memory at a file offset of the probed file (uprobes only)
)

// Fetch is a parsed FETCHARG.
type Fetch struct {
	Kind FetchKind
	// Text is the form's own text: the register name, the symbol (with its +-offset), the
	// number of $stackN / $argN / @ADDR / \IMM as written, the string of \"...", the BTF
	// expression, or the field path after $retval ("->a->b").
	Text   string
	Offset int64  // FetchDeref: the offset
	User   bool   // FetchDeref: +u / -u (user-space memory)
	Inner  *Fetch // FetchDeref: what is dereferenced
}

type span struct{ start, end int }

type headSpans struct {
	kind  span // "p", "r", "r10"
	group span // valid when end > start
	event span
	sep   bool // the head has a ':' (group/event part present, maybe empty)
}

// Parser parses definitions for one kernel.
type Parser struct {
	Features tracefs.ProbeFeatures
	// Arch selects the register names (GOARCH values); "" means the running binary's.
	Arch string
	// Kernel, when set, checks what the grammar cannot: the probed symbol against kallsyms,
	// BTF argument names, ->field chains, $retval and :string against BTF. Without it (or
	// where the kernel exposes no BTF) those are left to the kernel. It reads kernel files on
	// first use: the console, which parses at every key press inside Update, leaves it nil.
	Kernel *Kernel
	// User, when set, resolves a uprobe's PATH:SYMBOL from the ELF file and checks the file
	// (uprobe.go); without it a uprobe place is checked as grammar only.
	User *UserSpace
	// Force passes what ftctl refuses although the kernel may take it, because it is unsafe
	// or does not do what it says (--force): a return probe on a Go binary, r<N> on a uprobe,
	// the symbol and symstr types of a uprobe, $retval's fields on a uprobe (uprobe.go). Each
	// one passed is noted in Definition.Forced. What the kernel refuses stays refused.
	Force bool
}

// AllFeatures enables every feature the parser knows: for parsing what a kernel lists, and
// for tests.
var AllFeatures = tracefs.ProbeFeatures{
	MaxActive: true, ReturnSuffix: true, ArgN: true, BTFArgs: true, BTFFields: true,
	RetArgs: true, Comm: true, Imm: true, ImmString: true, Char: true, Ustring: true,
	Symstr: true, PdPD: true, Bitfield: true, Array: true, Fprobe: true, Tprobe: true, Eprobe: true,
}

// Parse parses and validates one definition line. Errors are *SyntaxError, positioned in src.
func (p Parser) Parse(src string) (*Definition, error) {
	st := &state{p: p, d: &Definition{src: src, force: p.Force}}
	if err := st.parse(); err != nil {
		return nil, err
	}
	return st.d, nil
}

// Source is the text the definition was parsed from.
func (d *Definition) Source() string { return d.src }

// WithGroup is a copy of the definition in another group (ftctl trace puts a session's probes
// in its own group).
func (d *Definition) WithGroup(group string) *Definition {
	c := *d
	c.Group = group
	return &c
}

// IsReturn reports a return probe (r, or p with SYM%return).
func (d *Definition) IsReturn() bool { return d.Kind == Kretprobe || d.PercentReturn }

// Place is the probed place as written: [MOD:]SYM[+OFFS][%return] or the address, a
// uprobe's PATH:SYMBOL[+OFFS] or PATH:0xOFFSET, an fprobe's SYM[%return], a tracepoint, or an
// event probe's SYSTEM.EVENT.
func (d *Definition) Place() string {
	if d.Uprobe != nil {
		return d.Uprobe.String()
	}
	switch d.Kind {
	case Eprobe:
		return d.AttachSystem + "." + d.AttachEvent
	case Fprobe, Tprobe:
		if d.PercentReturn {
			return d.Symbol + "%return"
		}
		return d.Symbol
	}
	if d.IsAddr {
		return "0x" + strconv.FormatUint(d.Addr, 16)
	}
	s := d.Symbol
	if d.Module != "" {
		s = d.Module + ":" + s
	}
	if _, numeric := kstr.Strtoull(s); d.Offset != 0 || numeric {
		s += "+" + strconv.FormatInt(d.Offset, 10) // "+0" keeps a numeric symbol a symbol
	}
	if d.PercentReturn {
		s += "%return"
	}
	return s
}

// SyntaxError is a definition refused before it reaches the kernel, with the kernel's own
// wording where the kernel has one.
type SyntaxError struct {
	Source string
	Pos    int    // byte offset in Source where the caret goes (may equal len(Source))
	Msg    string // what is wrong
	Hint   string // what to do about it, "" if nothing to add
	// Symbol is the probed symbol when kallsyms does not list it: for close names
	// (Kernel.Suggest), which are too slow to find at every key press of the console.
	Symbol string
}

// ErrSyntax: every SyntaxError is one (errors.Is), wherever it is wrapped.
var ErrSyntax = errors.New("invalid probe definition")

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid probe definition: %s (at byte %d)", e.Msg, e.Pos+1)
}

type state struct {
	p      Parser
	d      *Definition
	tok    int // token whose offsets errors refer to
	ret    bool
	fentry bool

	// BTF: the probed function's prototype (looked up once, when an argument needs it), and
	// the type of what the argument being parsed fetches (ctx->last_type in the kernel).
	fnDone   bool
	fnKnown  bool
	fn       *btf.FuncProto
	fnSpec   *btf.Spec
	lastType btf.Type
	// argN: the parameter an unnamed $argN stands for (the kernel rewrites it into the
	// parameter's name); unnamedArgN: the argument is a whole "$argN..." token.
	argN        *btf.FuncParam
	unnamedArgN bool
	// wholeArgs: the argument being parsed is the "$arg*" the kernel expands (the only
	// place $arg* means every parameter).
	wholeArgs bool
	// event: an event probe's attached event, nil when ftctl cannot read its format.
	event *tracefs.Format
}

func (st *state) errAt(tok, off int, msg string) *SyntaxError {
	pos := len(st.d.src)
	if tok < len(st.d.tokens) {
		pos = st.d.tokens[tok].start + off
	}
	return &SyntaxError{Source: st.d.src, Pos: pos, Msg: msg}
}

func (st *state) err(off int, msg string) *SyntaxError { return st.errAt(st.tok, off, msg) }

func (st *state) unsupported(off int, msg, feature string) *SyntaxError {
	e := st.err(off, msg)
	e.Hint = "this kernel does not support " + feature + " (its tracefs README does not list it)"
	return e
}

func (st *state) parse() error {
	d, src := st.d, st.d.src
	if i := strings.IndexByte(src, '\n'); i >= 0 {
		return &SyntaxError{Source: src, Pos: i, Msg: "a definition is a single line",
			Hint: "add one probe per command"}
	}
	// trace_parse_run_command(): everything after '#' is a comment.
	line := src
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	if len(line) > MaxLineLen {
		return &SyntaxError{Source: src, Pos: MaxLineLen, Msg: fmt.Sprintf("line is too long: the kernel takes at most %d bytes", MaxLineLen)}
	}
	for i := 0; i < len(line); {
		for i < len(line) && kstr.IsSpace(line[i]) {
			i++
		}
		j := i
		for j < len(line) && !kstr.IsSpace(line[j]) {
			j++
		}
		if j > i {
			d.tokens = append(d.tokens, span{i, j})
		}
		i = j
	}
	if len(d.tokens) == 0 {
		return &SyntaxError{Source: src, Msg: "empty definition",
			Hint: `write e.g. "p:myprobe vfs_read" or "r:myret vfs_read ret=$retval"`}
	}
	head := st.text(0)
	switch head[0] {
	case 'p', 'r':
		d.Kind = Kind(head[0])
	case '-':
		return st.parseDelete(head)
	case 'f', 't', 'e':
		return st.parseDynamic(head)
	case 's', 'u':
		return &SyntaxError{Source: src, Pos: d.tokens[0].start,
			Msg:  fmt.Sprintf("%q definitions are not probes", head[:1]),
			Hint: "ftctl probe defines kprobes (p, r), fprobes (f), tracepoint probes (t) and event probes (e)"}
	default:
		return &SyntaxError{Source: src, Pos: d.tokens[0].start,
			Msg: fmt.Sprintf("unknown probe type %q", head[:1]), Hint: "a definition starts with p (kprobe), r (kretprobe), f (fprobe), t (tracepoint probe), e (event probe) or -: (removal)"}
	}
	st.ret = d.Kind == Kretprobe
	d.head.kind = span{0, 1}
	// Event part: after the first ':' of argv[0][1:].
	evOff := -1
	if i := strings.IndexByte(head[1:], ':'); i >= 0 {
		evOff = i + 2
		d.head.sep = true
	}
	if len(head) > 1 && kstr.IsDigit(head[1]) {
		if d.Kind != Kretprobe {
			if !fprobeSeries(st.p.Features) {
				return st.err(1, "Maxactive is not for kprobe") // MAXACT_NO_KPROBE (seen: 6.1)
			}
			return st.err(1, "Maxactive is only for function exit") // BAD_MAXACT_TYPE (seen: 6.12)
		}
		if !st.p.Features.MaxActive {
			return st.unsupported(1, "Invalid maxactive number", "r[MAXACTIVE]")
		}
		end := len(head)
		if evOff >= 0 {
			end = evOff - 1
		}
		if err := st.maxActive(head[1:end]); err != nil {
			return err
		}
		d.head.kind = span{0, end}
	} else if evOff >= 0 {
		d.head.kind = span{0, evOff - 1}
	} else {
		d.head.kind = span{0, len(head)}
	}
	if len(d.tokens) < 2 {
		return st.errAt(1, 0, "no probe place: give a symbol ([MOD:]SYM[+OFFS]) or an address")
	}
	if err := st.parsePlace(); err != nil {
		return err
	}
	st.tok = 0
	if evOff >= 0 {
		if err := st.parseEventName(head[evOff:], evOff, false); err != nil {
			return err
		}
	}
	if err := st.parseArgs(); err != nil {
		return err
	}
	return st.instructionBoundary()
}

// instructionBoundary is what registering the kprobe refuses after the line parsed
// (BAD_INSN_BNDRY, -EILSEQ from can_probe()), where ftctl can tell without the kernel's text:
// on x86 a function ftrace can trace (available_filter_functions lists it) starts with a
// 4-byte endbr64 (IBT) or the 5-byte call to __fentry__, so offsets 1 to 3 are inside an
// instruction whichever it is (seen: vfs_read+1, +2, +3 refused by 6.1 and 6.12). Other
// offsets need the kernel's text, left to the kernel: +4 is inside the call without IBT and
// the call's start with it, +5 the reverse (seen: 6.1 refuses +4, 6.12 refuses +5), and an
// IBT kernel's function that is never called indirectly may have no endbr64.
func (st *state) instructionBoundary() error {
	d := st.d
	if st.arch() != "amd64" || d.Uprobe != nil || d.IsAddr || d.Offset < 1 || d.Offset > 3 {
		return nil
	}
	if st.p.Kernel.functionMatches(d.Symbol) <= 0 {
		return nil
	}
	e := st.errAt(1, 0, "Probe point is not an instruction boundary")
	e.Hint = fmt.Sprintf("%s+%d is inside %s's first instruction (endbr64 or the call to __fentry__): probe %s itself", d.Symbol, d.Offset, d.Symbol, d.Symbol)
	return e
}

// fprobeSeries reports a kernel whose README announces grammar of the 6.5 series that added
// fprobe events, or of a later release: f: or t: definitions, BTF argument names
// (<argname>), $arg<N> on return probes, %pd/%pD. That series reworded the kernel's refusals
// ftctl repeats: "tracing/probes: Add fprobe events for tracing function entry and exit"
// turned MAXACT_NO_KPROBE ("Maxactive is not for kprobe") into BAD_MAXACT_TYPE ("Maxactive
// is only for function exit"), and "tracing/probes: Move event parameter fetching code to
// common parser" made an event probe's unknown $FIELD the common parser's BAD_VAR at the '$'
// instead of trace_eprobe.c's BAD_ATTACH_ARG at the argument (seen: 6.1 the old words, 6.12
// the new). The README, not the version, decides: every marker here appeared with that
// series or after it, so a kernel that announces one has the new words. The proxy misses a
// kernel of the series built with neither CONFIG_FPROBE_EVENTS nor
// CONFIG_PROBE_EVENTS_BTF_ARGS and older than the later markers (%pd/%pD, in the README's
// type list whatever the config): ftctl would use the old words there, and the kernel's own
// refusal, shown if ftctl's is passed, has the new ones.
func fprobeSeries(ft tracefs.ProbeFeatures) bool {
	return ft.Fprobe || ft.Tprobe || ft.BTFArgs || ft.RetArgs || ft.PdPD
}

// maxActive reads r[N]'s (or f[N]'s) N as the kernel does: kstrtouint base 0, 1 to 4096.
func (st *state) maxActive(n string) error {
	v, ok := kstr.Strtouint(n)
	if len(n) > MaxEventNameLen-1 || !ok || v == 0 {
		return st.err(1, "Invalid maxactive number")
	}
	if v > MaxMaxActive {
		return st.err(1, "Maxactive is too big")
	}
	st.d.MaxActive = v
	return nil
}

func (st *state) text(tok int) string {
	t := st.d.tokens[tok]
	return st.d.src[t.start:t.end]
}

func (st *state) parseDelete(head string) error {
	d := st.d
	d.Kind = Delete
	if len(head) < 2 || head[1] != ':' {
		return st.err(0, `a removal is written "-:[GROUP/]EVENT"`)
	}
	d.head.kind = span{0, 1}
	d.head.sep = true
	if len(head) == 2 {
		return st.err(2, "Event name is not specified")
	}
	if err := st.parseEventName(head[2:], 2, true); err != nil {
		return err
	}
	if d.Event == "" {
		return st.err(len(head), "Event name is not specified")
	}
	return nil
}

// parseEventName is traceprobe_parse_event_name(): [GROUP/|GROUP.]EVENT, where a group with
// an empty event asks the kernel to name the event (6.1+).
func (st *state) parseEventName(s string, off int, del bool) error {
	d := st.d
	slash := strings.IndexByte(s, '/')
	if slash < 0 {
		slash = strings.IndexByte(s, '.')
	}
	ev, evOff := s, off
	if slash >= 0 {
		if slash == 0 {
			return st.err(off, "Group name is not specified")
		}
		if slash+1 > MaxEventNameLen {
			return st.err(off, "Group name is too long")
		}
		g := s[:slash]
		if !isGoodSystemName(g) {
			return st.err(off, "Group name must follow the same rules as C identifiers")
		}
		d.Group = g
		d.head.group = span{off, off + slash}
		ev, evOff = s[slash+1:], off+slash+1
	}
	if ev == "" {
		if slash >= 0 && !del {
			return nil
		}
		return st.err(evOff, "Event name is not specified")
	}
	if len(ev) >= MaxEventNameLen { // (seen: 64 refused by 6.1 and 6.12)
		return st.err(evOff, "Event name is too long")
	}
	if !isGoodName(ev) {
		return st.err(evOff, "Event name must follow the same rules as C identifiers")
	}
	d.Event = ev
	d.head.event = span{evOff, evOff + len(ev)}
	return nil
}

// parsePlace parses argv[1]: an address, or [MOD:]SYM[+OFFS][%return].
func (st *state) parsePlace() error {
	d := st.d
	st.tok = 1
	place := st.text(1)
	if v, ok := kstr.Strtoull(place); ok {
		d.IsAddr, d.Addr = true, v
		return nil
	}
	if isUprobePlace(place) {
		return st.parseUprobePlace()
	}
	sym := place
	if i := strings.IndexByte(sym, '%'); i >= 0 {
		if sym[i:] != "%return" {
			return st.err(i, "Invalid probed address suffix")
		}
		if !st.p.Features.ReturnSuffix {
			return st.unsupported(i, "Invalid probed address suffix", "SYM%return")
		}
		sym = sym[:i]
		d.PercentReturn = true
		st.ret = true
	}
	var off int64
	if i := strings.IndexAny(sym, "+-"); i >= 0 {
		v, ok := kstr.Strtol(sym[i:])
		if !ok || v < 0 || v > 1<<32-1 {
			return st.err(0, "Invalid probed address or symbol")
		}
		off, sym = v, sym[:i]
	}
	d.Offset = off
	if mod, s, ok := strings.Cut(sym, ":"); ok {
		d.Module, d.Symbol = mod, s
	} else {
		d.Symbol = sym
	}
	if d.Symbol == "" || (d.Module == "" && strings.HasPrefix(sym, ":")) {
		return st.err(0, "Invalid probed address or symbol")
	}
	// validate_probe_symbol(): a symbol kallsyms does not list, or lists more than once, is
	// refused before anything else.
	switch n := st.p.Kernel.SymbolCount(d.Module, d.Symbol); {
	case n == 0:
		// Close names are the caller's to find (SyntaxError.Symbol): the console checks a
		// definition at every key press.
		e := st.err(0, "Invalid probed address or symbol")
		e.Hint = "kallsyms lists no symbol " + d.Symbol
		e.Symbol = d.Symbol
		return e
	case n > 1:
		e := st.err(0, "The symbol is not unique")
		e.Hint = fmt.Sprintf("kallsyms lists %d symbols called %s: probe one by its address, or MODULE:SYMBOL", n, d.Symbol)
		return e
	}
	if st.ret && (off > 4 || off >= 1 && off <= 3) && st.arch() == "amd64" {
		// x86 arch_adjust_kprobe_addr(): the entry is offset 0, or 4 with IBT (past the
		// endbr64); never 1 to 3.
		return st.err(0, "Retprobe address must be an function entry")
	}
	// kprobe_on_func_entry(): offset 0 of a function is its entry, and 4 on kernels built
	// with IBT (the endbr64); elsewhere the kernel refuses $argN and BTF names.
	st.fentry = (off == 0 || off == 4) && !st.ret
	return nil
}

func (st *state) parseArgs() error {
	d := st.d
	if d.argEnd == 0 {
		d.argEnd = len(d.tokens)
	}
	args := d.tokens[2:d.argEnd]
	known := map[string]bool{
		"common_type": true, "common_flags": true, "common_preempt_count": true,
		"common_pid": true, "common_tgid": true, "__probe_ip": true, "__probe_ret_ip": true,
		"__probe_func": true,
	}
	// traceprobe_expand_meta_args(): with BTF, $argN and $arg* become parameter names.
	varArgs := -1
	for i := range args {
		if d.Kind == Eprobe { // an event probe's $argN is a field name like any other
			break
		}
		t := st.text(i + 2)
		if !strings.HasPrefix(t, "$arg") {
			continue
		}
		st.tok = i + 2
		if !st.p.Features.BTFArgs || st.d.Uprobe != nil { // a uprobe's $arg: uprobeFetch
			break
		}
		// NOFENTRY_ARGS. The kernel that lets return probes fetch $arg<N> (its README says
		// "kernel return probes support: $retval, $arg<N>, $comm") words it "... entry or
		// exit" (seen: 6.12); before it only an entry took them, and 6.5's words said
		// "... entry" (not seen: neither VM kernel has BTF arguments without that line).
		if !st.fentry && !(st.ret && st.p.Features.RetArgs) {
			if !st.p.Features.RetArgs {
				return st.err(0, "$arg* can be used only on function entry")
			}
			return st.err(0, "$arg* can be used only on function entry or exit")
		}
		if len(t) > 4 && kstr.IsDigit(t[4]) {
			continue
		}
		if len(t) < 5 || t[4] != '*' {
			return st.err(0, "Invalid $-variable specified")
		}
		if varArgs >= 0 {
			return st.err(0, "$arg* can be used only once in the parameters")
		}
		varArgs = i
	}
	// With BTF, $argN and $arg* are rewritten into the parameters' names before anything is
	// parsed; $argN past the last parameter has no name.
	n := len(args)
	if varArgs >= 0 || st.hasArgN(args) {
		if err := st.expandArgs(args, varArgs, &n); err != nil {
			return err
		}
	}
	// __trace_kprobe_create(): more than MAX_TRACE_ARGS is E2BIG on 6.12 (no error_log
	// entry); 6.1 takes the line and drops the arguments past the 128th.
	if n > MaxArgs {
		e := st.errAt(2+min(MaxArgs, len(args)-1), 0, "Too many arguments are specified")
		e.Hint = fmt.Sprintf("%d arguments: the kernel records at most %d (6.12 refuses more, 6.1 silently drops the rest)", n, MaxArgs)
		return e
	}
	for i := range args {
		st.tok = i + 2
		t := st.text(i + 2)
		st.wholeArgs = i == varArgs
		a, names, err := st.parseArg(t, i, i == varArgs)
		if err != nil {
			return err
		}
		for _, name := range names {
			if known[name] {
				return st.err(0, "This argument name is already used")
			}
			known[name] = true
		}
		d.Args = append(d.Args, a)
	}
	return nil
}

// expandArgs is traceprobe_expand_meta_args(): with BTF, $arg* becomes every parameter and
// $argN the Nth; n grows by the parameters $arg* adds.
func (st *state) expandArgs(args []span, varArgs int, n *int) error {
	fn, fnKnown := st.proto()
	if fnKnown {
		switch {
		case (fn == nil || len(fn.Params) == 0) && varArgs >= 0:
			return st.errAt(varArgs+2, 0, "BTF is not available or not supported")
		case fn != nil && len(fn.Params) > 0:
			for i := range args {
				t := st.text(i + 2)
				if !strings.HasPrefix(t, "$arg") || i == varArgs {
					continue
				}
				num, _ := kstr.SimpleStrtoul(t[4:])
				if num >= 1 && num > uint64(len(fn.Params)) {
					return st.errAt(i+2, 0, "This variable is not found at this probe point")
				}
			}
			if varArgs >= 0 {
				*n += len(fn.Params) - 1
			}
		}
	}
	return nil
}

// hasArgN: an argument is a whole "$argN" (what the kernel rewrites with BTF).
func (st *state) hasArgN(args []span) bool {
	for i := range args {
		if t := st.text(i + 2); strings.HasPrefix(t, "$arg") && len(t) > 4 && kstr.IsDigit(t[4]) {
			return true
		}
	}
	return false
}

// proto is the probed function's BTF prototype, looked up on first use. known is false when
// nothing can be checked: no BTF arguments in this kernel, no Kernel, no BTF, an address.
func (st *state) proto() (*btf.FuncProto, bool) {
	if !st.fnDone {
		st.fnDone = true
		if st.p.Features.BTFArgs && st.p.Kernel != nil && !st.d.IsAddr && st.d.Kind != Eprobe {
			probed := st.p.Kernel.probed
			if st.d.Kind == Tprobe {
				probed = func(_, name string) (*funcBTF, bool) { return st.p.Kernel.tracepointBTF(name) }
			}
			f, known := probed(st.d.Module, st.d.Symbol)
			st.fnKnown = known
			if f != nil {
				st.fn, st.fnSpec = f.proto, f.spec
			}
		}
	}
	return st.fn, st.fnKnown
}

// param is the BTF parameter called name.
func (st *state) param(name string) *btf.FuncParam {
	for i := range st.fn.Params {
		if st.fn.Params[i].Name == name {
			return &st.fn.Params[i]
		}
	}
	return nil
}

// parseArg is traceprobe_parse_probe_arg(): [NAME=]BODY. It returns the field names the
// kernel will use (several for $arg*), none when only BTF can tell and ftctl has none.
func (st *state) parseArg(t string, i int, varArgs bool) (Arg, []string, error) {
	a, name, err := st.parseArg1(t, i)
	if err != nil {
		return a, nil, err
	}
	switch {
	case name != "":
		return a, []string{name}, nil
	case varArgs:
		if fn, _ := st.proto(); fn != nil {
			var names []string
			for _, p := range fn.Params {
				if p.Name != "" { // a variadic function's "..." has no name
					names = append(names, p.Name)
				}
			}
			return a, names, nil
		}
	case st.argN != nil:
		return a, []string{st.argN.Name}, nil
	}
	return a, nil, nil
}

func (st *state) parseArg1(t string, i int) (Arg, string, error) {
	var a Arg
	body, off := t, 0
	name := ""
	st.lastType = nil
	st.argN = nil
	st.unnamedArgN = false
	if eq := strings.IndexByte(t, '='); eq >= 0 {
		if eq > MaxArgNameLen {
			return a, "", st.err(0, "Argument name is too long")
		}
		if eq == 0 {
			return a, "", st.err(0, "Argument name is not specified")
		}
		a.Name = t[:eq]
		name = a.Name
		body, off = t[eq+1:], eq+1
	} else if st.p.Features.BTFArgs && st.d.Kind != Eprobe {
		// generate_probe_arg_name(): the text before ':' when it is an identifier, else argN.
		// $argN and $arg* are renamed after the BTF parameters: unknown here.
		if strings.HasPrefix(t, "$arg") {
			name = ""
			st.unnamedArgN = true
			if fn, _ := st.proto(); fn != nil {
				if n, _ := kstr.SimpleStrtoul(t[4:]); n >= 1 && n <= uint64(len(fn.Params)) {
					st.argN = &fn.Params[n-1]
				}
			}
		} else if n, _, _ := strings.Cut(t, ":"); isGoodName(n) {
			name = n
		} else {
			name = "arg" + strconv.Itoa(i+1)
		}
	} else {
		name = "arg" + strconv.Itoa(i+1)
	}
	if a.Name != "" && !isGoodName(a.Name) {
		return a, "", st.err(0, "Argument name must follow the same rules as C identifiers")
	}
	if a.Name != "" && body == "$arg*" {
		// Only a whole "$arg*" argument is expanded; named, it is an unknown variable.
		return a, "", st.err(off, "Invalid $-variable specified")
	}
	if err := st.parseBody(&a, body, off); err != nil {
		return a, "", err
	}
	return a, name, nil
}

// parseBody is traceprobe_parse_probe_arg_body(): FETCHARG[:TYPE[[N]]].
func (st *state) parseBody(a *Arg, body string, off int) error {
	if len(body) > MaxArgStrLen {
		return st.err(off, "Argument expression is too long")
	}
	if body == "" {
		return st.err(off, "No argument expression")
	}
	fetchText := body
	typeOff := -1
	if c := strings.IndexByte(body, ':'); c >= 0 {
		fetchText = body[:c]
		typeOff = c + 1
		typ := body[c+1:]
		if b := strings.IndexByte(typ, '['); b >= 0 {
			if !st.p.Features.Array {
				return st.unsupported(off+typeOff+b, "Array is not closed", "array types")
			}
			num := typ[b+1:]
			e := strings.IndexByte(num, ']')
			if e < 0 {
				return st.err(off+len(body), "Array is not closed")
			}
			if e != len(num)-1 {
				return st.err(off+typeOff+b+1+e+1, "Array has wrong suffix")
			}
			n, ok := kstr.Strtouint(num[:e])
			if !ok || n == 0 {
				return st.err(off+typeOff+b+1, "Invalid array size")
			}
			if n > MaxArrayLen {
				return st.err(off+typeOff+b+1, "Array number is too big")
			}
			a.Count = n
			typ = typ[:b]
		}
		a.Type = typ
	}
	tpos := off
	if typeOff >= 0 {
		tpos = off + typeOff
	}
	// %pd / %pD (6.5+): rewritten by the kernel into a string fetch through the dentry.
	if a.Type == "%pd" || a.Type == "%pD" {
		if !st.p.Features.PdPD {
			return st.unsupported(tpos, "Unknown type is specified", "the %pd/%pD types")
		}
		if a.Count != 0 {
			return st.err(tpos, "Unknown type is specified")
		}
		ops := 1
		f, err := st.parseFetch(fetchText, off, &ops)
		if err != nil {
			return err
		}
		a.Fetch = *f
		return nil
	}
	// A ':' with no type after it (":" or ":[N]") is a type too: the empty one, which
	// find_fetch_type() does not know (only no ':' at all means the default).
	typed := typeOff >= 0
	special := fetchText == "$comm" || fetchText == "$COMM" || strings.HasPrefix(fetchText, `\"`)
	typ := a.Type
	if special {
		if a.Count != 0 || (typed && a.Type != "string") {
			return st.err(tpos, "$comm and immediate-string only accepts string type")
		}
		typ = "string"
	} else if typed {
		if err := st.checkType(a.Type, tpos); err != nil {
			return err
		}
	}
	ops := 0
	f, err := st.parseFetch(fetchText, off, &ops)
	if err != nil {
		return err
	}
	a.Fetch = *f
	return st.finalize(a, typ, f, ops, tpos, off)
}

// checkType is find_fetch_type() with the kernel's features.
func (st *state) checkType(typ string, pos int) error {
	ft := st.p.Features
	if st.d.Uprobe != nil {
		if err := st.uprobeType(typ, pos); err != nil {
			return err
		}
	}
	if typ != "" && typ[0] == 'b' {
		i := strings.IndexByte(typ, '/')
		if i < 0 {
			return st.err(pos, "Unknown type is specified")
		}
		switch v, ok := kstr.Strtoull(typ[i+1:]); {
		case !ok:
			return st.err(pos, "Unknown type is specified")
		case v != 8 && v != 16 && v != 32 && v != 64:
			return st.err(pos, "Unknown type is specified")
		}
		return nil
	}
	switch typ {
	case "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64",
		"string", "symbol":
		return nil
	case "char":
		if !ft.Char {
			return st.unsupported(pos, "Unknown type is specified", "the char type")
		}
		return nil
	case "ustring":
		if !ft.Ustring {
			return st.unsupported(pos, "Unknown type is specified", "the ustring type")
		}
		return nil
	case "symstr":
		if !ft.Symstr {
			return st.unsupported(pos, "Unknown type is specified", "the symstr type")
		}
		return nil
	}
	e := st.err(pos, "Unknown type is specified")
	e.Hint = "types: u8..u64 s8..s64 x8..x64 string symbol" + optional(ft.Char, " char") +
		optional(ft.Ustring, " ustring") + optional(ft.Symstr, " symstr") +
		optional(ft.PdPD, " %pd %pD") + " b<width>@<offset>/<container>" + optional(ft.Array, ", and TYPE[N]")
	return e
}

func optional(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// parseFetch is parse_probe_arg(): one FETCHARG at offset off of the current token. ops is
// the index of the fetch instruction being filled (the kernel has FETCH_INSN_MAX of them).
func (st *state) parseFetch(s string, off int, ops *int) (*Fetch, error) {
	ft := st.p.Features
	tooMany := func() error { return st.err(off, "Dereference is too much nested") }
	if s == "" {
		return nil, st.err(off, "Invalid fetch argument")
	}
	if st.d.Uprobe != nil {
		if f, err, done := st.uprobeFetch(s, off); done {
			return f, err
		}
	}
	if k := st.d.Kind; k == Fprobe || k == Tprobe || k == Eprobe {
		if f, err, done := st.fetchDynamic(s, off); done {
			return f, err
		}
	}
	switch s[0] {
	case '$':
		return st.parseVar(s, off)
	case '%':
		if !validRegister(st.arch(), s[1:]) {
			e := st.err(off, "Invalid register name")
			if regs := registers[st.arch()]; regs != nil {
				e.Hint = "registers here: %" + strings.Join(regs, " %")
			}
			return nil, e
		}
		return &Fetch{Kind: FetchReg, Text: s[1:]}, nil
	case '@':
		if len(s) > 1 && kstr.IsDigit(s[1]) {
			if _, ok := kstr.Strtoull(s[1:]); !ok {
				return nil, st.err(off, "Invalid memory address")
			}
			*ops++
			if *ops == fetchInsnMax-1 {
				return nil, tooMany()
			}
			return &Fetch{Kind: FetchAddr, Text: s[1:]}, nil
		}
		if len(s) > 1 && s[1] == '+' {
			return nil, st.err(off, "File offset is not available with kprobe")
		}
		*ops += 2
		if *ops >= fetchInsnMax-1 {
			return nil, tooMany()
		}
		return &Fetch{Kind: FetchSymbol, Text: s[1:]}, nil
	case '+', '-':
		f := &Fetch{Kind: FetchDeref}
		rest, neg := s[1:], s[0] == '-'
		if rest != "" && rest[0] == 'u' {
			f.User = true
			rest = rest[1:]
		}
		open := strings.IndexByte(rest, '(')
		if open < 0 {
			return nil, st.err(off, "Dereference needs a brace")
		}
		num := rest[:open]
		if neg {
			num = "-" + num
		}
		v, ok := kstr.Strtol(num)
		if !ok {
			return nil, st.err(off, "Invalid dereference offset")
		}
		f.Offset = v
		innerOff := off + (len(s) - len(rest)) + open + 1
		inner := rest[open+1:]
		close := strings.LastIndexByte(inner, ')')
		if close < 0 {
			return nil, st.err(innerOff+len(inner), "Dereference brace is not closed")
		}
		in, err := st.parseFetch(inner[:close], innerOff, ops)
		if err != nil {
			return nil, err
		}
		if in.Kind == FetchComm || in.Kind == FetchImmString {
			return nil, st.err(innerOff, "$comm can not be dereferenced")
		}
		st.lastType = nil // what is read through a dereference has no BTF type
		f.Inner = in
		if in.Kind != FetchBTF && !(in.Kind == FetchRetval && in.Text != "") {
			*ops++
			if *ops == fetchInsnMax-1 {
				return nil, st.err(innerOff, "Dereference is too much nested")
			}
		}
		return f, nil
	case '\\':
		if len(s) > 1 && s[1] == '"' {
			if !ft.ImmString {
				return nil, st.unsupported(off, "Invalid fetch argument", `immediate strings (\"...")`)
			}
			// __parse_imm_string() looks at str[len-1]: for an empty str that is the opening
			// quote itself, so `\"` alone is an empty string to the kernel.
			str := s[2:]
			if str == "" {
				return &Fetch{Kind: FetchImmString}, nil
			}
			if str[len(str)-1] != '"' {
				return nil, st.err(off+len(s), `String is not closed with '"'`)
			}
			return &Fetch{Kind: FetchImmString, Text: str[:len(str)-1]}, nil
		}
		if !ft.Imm {
			return nil, st.unsupported(off, "Invalid fetch argument", `immediate values (\IMM)`)
		}
		if !validImmediate(s[1:]) {
			return nil, st.err(off+1, "Invalid immediate value")
		}
		return &Fetch{Kind: FetchImm, Text: s[1:]}, nil
	}
	if kstr.IsAlpha(s[0]) || s[0] == '_' {
		if !ft.BTFArgs {
			return nil, st.unsupported(off, "Invalid fetch argument", "BTF argument names")
		}
		if !st.fentry && !st.ret {
			e := st.err(off, "BTF is not available or not supported")
			e.Hint = "argument names are only known at a function's entry (offset 0) or exit"
			return nil, e
		}
		if err := st.checkBTFPath(s, off, false); err != nil {
			return nil, err
		}
		if err := st.btfVar(s, off); err != nil {
			return nil, err
		}
		return &Fetch{Kind: FetchBTF, Text: s}, nil
	}
	return nil, st.err(off, "Invalid fetch argument")
}

// checkBTFPath checks the syntax of NAME[->field|.field]...: a '-' must start "->", and a
// dot cannot follow the argument itself (only a field).
func (st *state) checkBTFPath(s string, off int, retval bool) error {
	ft := st.p.Features
	first := true
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '-':
			if i+1 >= len(s) || s[i+1] != '>' {
				return st.err(off+i, "Failed to parse single hyphen. Forgot '>'?")
			}
			if !ft.BTFFields {
				return st.unsupported(off+i, "Invalid fetch argument", "BTF fields (->field)")
			}
			first = false
			i++
		case '.':
			if first && !retval {
				return st.err(off+i+1, "Non pointer structure/union argument is not supported.")
			}
			if !ft.BTFFields {
				return st.unsupported(off+i, "Invalid fetch argument", "BTF fields (.field)")
			}
		}
	}
	return nil
}

func (st *state) parseVar(s string, off int) (*Fetch, error) {
	ft := st.p.Features
	v := s[1:]
	switch {
	case strings.HasPrefix(v, "retval"):
		if !st.ret {
			return nil, st.err(off, "$retval is not available on probe")
		}
		rest := v[len("retval"):]
		if rest == "" {
			if err := st.btfRetval("", off); err != nil {
				return nil, err
			}
			return &Fetch{Kind: FetchRetval}, nil
		}
		if !ft.BTFArgs {
			return nil, st.err(off, "Invalid $-variable specified")
		}
		if rest[0] != '-' && rest[0] != '.' {
			return nil, st.err(off, "Invalid $-variable specified")
		}
		if err := st.checkBTFPath(rest, off+7, false); err != nil {
			return nil, err
		}
		if err := st.btfRetval(rest, off); err != nil {
			return nil, err
		}
		return &Fetch{Kind: FetchRetval, Text: rest}, nil
	case strings.HasPrefix(v, "stack"):
		rest := v[len("stack"):]
		if rest == "" {
			return &Fetch{Kind: FetchStackPtr}, nil
		}
		if !kstr.IsDigit(rest[0]) {
			return nil, st.err(off, "Invalid $-variable specified")
		}
		n, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return nil, st.err(off, "Invalid $-variable specified")
		}
		// PARAM_MAX_STACK is THREAD_SIZE/sizeof(long): 2048 with 16 KiB stacks (x86-64).
		if n > 2048 {
			return nil, st.err(off, "Invalid stack number")
		}
		return &Fetch{Kind: FetchStack, Text: rest}, nil
	case v == "comm" || v == "COMM":
		if !ft.Comm {
			return nil, st.unsupported(off, "Invalid $-variable specified", "$comm")
		}
		return &Fetch{Kind: FetchComm, Text: v}, nil
	case strings.HasPrefix(v, "arg"):
		rest := v[len("arg"):]
		if rest == "*" {
			if !ft.BTFArgs {
				return nil, st.unsupported(off, "Invalid $-variable specified", "$arg* (BTF arguments)")
			}
			if !st.wholeArgs || off != 0 {
				// traceprobe_expand_meta_args() expands only an argument that is "$arg*";
				// anywhere else (under a dereference) it is an unknown variable (seen: 6.12).
				e := st.err(off, "Invalid $-variable specified")
				e.Hint = "$arg* stands for every parameter only as a whole argument"
				return nil, e
			}
			return &Fetch{Kind: FetchArgs}, nil
		}
		if !ft.ArgN {
			return nil, st.unsupported(off, "Invalid $-variable specified", "$argN")
		}
		// kstrtoul(rest, 10): one leading '+' is allowed.
		n, err := strconv.ParseUint(strings.TrimPrefix(rest, "+"), 10, 64)
		if err != nil || strings.HasPrefix(rest, "++") || strings.HasPrefix(rest, "+-") {
			return nil, st.err(off, "Invalid $-variable specified")
		}
		if n == 0 || n > 2048 {
			return nil, st.err(off, "Invalid argument number")
		}
		if st.ret && !ft.RetArgs {
			return nil, st.unsupported(off, "Invalid $-variable specified", "$argN on return probes")
		}
		if !st.fentry && !st.ret {
			return nil, st.err(off, "$argN is only available at a function entry (offset 0 of a symbol)")
		}
		if st.argN != nil {
			st.lastType = skipModifiers(st.argN.Type)
		}
		return &Fetch{Kind: FetchArgN, Text: rest}, nil
	}
	return nil, st.err(off, "Invalid $-variable specified")
}

// validImmediate is str_to_immediate().
func validImmediate(s string) bool {
	if s == "" {
		return false
	}
	switch {
	case kstr.IsDigit(s[0]):
		_, ok := kstr.Strtoull(s)
		return ok
	case s[0] == '-':
		_, ok := kstr.Strtol(s)
		return ok
	case s[0] == '+':
		_, ok := kstr.Strtol(s[1:])
		return ok
	}
	return false
}

// finalize is the kernel's store-operation checks (finalize_fetch_insn): which fetches a
// string or array type accepts, bitfields, and the instruction budget.
func (st *state) finalize(a *Arg, typ string, f *Fetch, ops, tpos, off int) error {
	unexpanded := false // BTF has no such function: $argN stays a register
	if f.Kind == FetchArgN && st.unnamedArgN {
		_, fnKnown := st.proto()
		unexpanded = fnKnown && st.fn == nil
	}
	btf := f.Kind == FetchBTF || f.Kind == FetchArgs || (f.Kind == FetchRetval && (f.Text != "" || st.lastType != nil)) ||
		(st.p.Features.BTFArgs && f.Kind == FetchArgN && st.unnamedArgN && !unexpanded)
	if btf && typ == "" {
		return nil // the type comes from BTF
	}
	// check_prepare_btf_string_fetch(): a string is read from a char array or through a
	// char pointer, nothing else.
	if st.lastType != nil && (typ == "string" || typ == "ustring") && !fitsString(st.fnSpec, st.lastType) {
		e := st.err(off, "This type does not fit for string.")
		e.Hint = "BTF types it " + CType(st.lastType) + "; a string needs char * or char[N]"
		return e
	}
	isString := typ == "string" || typ == "ustring" || typ == "symstr"
	last := f.Kind // the op left in code[ops]
	memory := last == FetchDeref || last == FetchAddr || last == FetchSymbol
	store := "" // the kernel's store op
	switch {
	case isString && typ == "symstr":
		if !btf && !(last == FetchReg || last == FetchStack || last == FetchRetval || last == FetchArgN || last == FetchField || memory) {
			return st.err(tpos, "symstr type requires a register or a memory address")
		}
		store = "symstr"
	case isString:
		if !btf && !(memory || last == FetchImm || last == FetchComm || last == FetchImmString || last == FetchField) {
			e := st.err(tpos, "String accepts only memory argument")
			e.Hint = "dereference the pointer: +0(" + fetchString(f) + "):" + typ
			return e
		}
		if f.Kind == FetchDeref && f.User || typ == "ustring" {
			store = "ustring"
		} else {
			store = "string"
		}
	case memory:
		store = "mem"
		if f.Kind == FetchDeref && f.User {
			store = "umem"
		}
	default:
		store = "raw"
	}
	if isString && (typ == "symstr" || last == FetchImm || last == FetchComm || last == FetchImmString || a.Count != 0) {
		ops++
		if ops == fetchInsnMax-1 {
			return st.err(off, "Dereference is too much nested")
		}
	} else if store == "raw" {
		ops++
		if ops == fetchInsnMax-1 {
			return st.err(off, "Dereference is too much nested")
		}
	}
	if typ != "" && typ[0] == 'b' {
		if !bitfieldOK(typ) {
			return st.err(tpos, "Invalid bitfield")
		}
		ops++
		if ops == fetchInsnMax-1 {
			return st.err(tpos, "Invalid bitfield")
		}
	}
	if a.Count != 0 && !btf {
		if store != "mem" && store != "string" && store != "ustring" {
			e := st.err(tpos, "String accepts only memory argument")
			e.Hint = "an array is read from memory: dereference, e.g. +0(%di):" + typ + "[" + strconv.Itoa(int(a.Count)) + "]"
			return e
		}
		ops++
		if ops == fetchInsnMax-1 {
			return st.err(off, "Dereference is too much nested")
		}
	}
	return nil
}

// bitfieldOK is __parse_bitfield_probe_arg(): b<width>@<offset>/<container>, width+offset
// within the container.
func bitfieldOK(typ string) bool {
	bw, n := kstr.SimpleStrtoul(typ[1:])
	rest := typ[1+n:]
	if bw == 0 || rest == "" || rest[0] != '@' {
		return false
	}
	rest = rest[1:]
	bo, n := kstr.SimpleStrtoul(rest)
	if n == 0 || n >= len(rest) || rest[n] != '/' {
		return false
	}
	size, _ := kstr.Strtoull(rest[n+1:]) // 8/16/32/64, checked by checkType
	return bw+bo <= size
}

func (st *state) arch() string {
	if st.p.Arch != "" {
		return st.p.Arch
	}
	return runtime.GOARCH
}

// registers are regs_query_register_offset()'s names (arch/*/kernel/ptrace.c regoffset_table).
var registers = map[string][]string{
	"amd64": {"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8", "ax", "cx",
		"dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"},
	"arm64": append(func() []string {
		var r []string
		for i := 0; i <= 30; i++ {
			r = append(r, "x"+strconv.Itoa(i))
		}
		return r
	}(), "sp", "pc", "pstate"),
}

// validRegister: on architectures ftctl has no table for, any name is left to the kernel.
func validRegister(arch, name string) bool {
	regs, ok := registers[arch]
	if !ok {
		return name != ""
	}
	for _, r := range regs {
		if r == name {
			return true
		}
	}
	return false
}
