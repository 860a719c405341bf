package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/tracefs"
)

// Kernel is what a definition is checked against besides the grammar the tracefs README
// announces: the kernel's symbols (kallsyms) and its BTF. Both are read lazily, once, on the
// first definition that needs them, and kept: a Kernel lives as long as one command.
type Kernel struct {
	kallsyms func() []byte // nil when unreadable: no symbol check
	btf      *tracefs.BTF  // nil: no BTF checks
	// functions is available_filter_functions (what an fprobe's glob must select), nil when
	// unreadable; format reads an event's format (an event probe's attached event);
	// dynamic gives dynamic_events' kinds by name.
	functions func() *filters.Index
	format    func(system, event string) (*tracefs.Format, error)
	dynamic   func() map[tracefs.EventName]string
	// events is available_events (tracepoints, and every other event), nil when unreadable.
	events func() []tracefs.EventName
	// Suggest, when set, names functions close to an unknown symbol.
	Suggest func(sym string) []string

	lookups int // probed() calls: a definition without BTF names must not read BTF (tests)
}

// NewKernel reads fs's kallsyms and BTF when first asked.
func NewKernel(fs *tracefs.FS) *Kernel {
	return &Kernel{
		kallsyms: sync.OnceValue(func() []byte {
			b, err := fs.Kallsyms(context.Background())
			if err != nil {
				return nil
			}
			return b
		}),
		btf: fs.BTF(),
		functions: sync.OnceValue(func() *filters.Index {
			if fs.Mount.Path == "" {
				return nil
			}
			b, err := fs.Top().ReadFile("available_filter_functions")
			if err != nil {
				return nil
			}
			ix, err := filters.ParseIndex(string(b))
			if err != nil {
				return nil
			}
			return ix
		}),
		format: func(system, event string) (*tracefs.Format, error) {
			if fs.Mount.Path == "" {
				return nil, errors.New("no tracefs")
			}
			return fs.Top().EventFormat(system, event)
		},
		dynamic: sync.OnceValue(fs.DynamicEvents),
		events: sync.OnceValue(func() []tracefs.EventName {
			if fs.Mount.Path == "" {
				return nil
			}
			evs, err := fs.Top().AvailableEvents()
			if err != nil {
				return nil
			}
			return evs
		}),
		Suggest: func(sym string) []string {
			if fs.Mount.Path == "" { // no tracefs: no function list
				return nil
			}
			b, err := fs.Top().ReadFile("available_filter_functions")
			if err != nil {
				return nil
			}
			return closeNames(string(b), sym, 5)
		},
	}
}

// NewKernelFrom is a Kernel on given data: kallsyms text and a BTF (tests).
func NewKernelFrom(kallsyms []byte, b *tracefs.BTF) *Kernel {
	return &Kernel{kallsyms: func() []byte { return kallsyms }, btf: b}
}

// SymbolCount is how many symbols of kallsyms have the name (in module mod when mod is not
// ""), as number_of_same_symbols() counts them: the kernel refuses a name that is not unique
// (EADDRNOTAVAIL, 6.6, and 6.1 stable). -1 when ftctl cannot tell.
func (k *Kernel) SymbolCount(mod, name string) int {
	if k == nil || k.kallsyms == nil {
		return -1
	}
	tab := k.kallsyms()
	if len(tab) == 0 {
		return -1
	}
	if mod != "" {
		if !bytes.Contains(tab, []byte("\t["+mod+"]\n")) {
			return -1 // not loaded: the kernel leaves the probe pending
		}
		return bytes.Count(tab, []byte(" "+name+"\t["+mod+"]\n"))
	}
	return bytes.Count(tab, []byte(" "+name+"\n")) + bytes.Count(tab, []byte(" "+name+"\t["))
}

// symbolModules are the modules whose kallsyms list name.
func (k *Kernel) symbolModules(name string) []string {
	if k == nil || k.kallsyms == nil {
		return nil
	}
	tab := k.kallsyms()
	needle := []byte(" " + name + "\t[")
	var mods []string
	for {
		i := bytes.Index(tab, needle)
		if i < 0 {
			return mods
		}
		tab = tab[i+len(needle):]
		if j := bytes.IndexByte(tab, ']'); j > 0 {
			mods = append(mods, string(tab[:j]))
		}
	}
}

// funcBTF is a function found in BTF: its prototype, the BTF it is in (vmlinux's, or a
// module's split on it) and the module ("" for vmlinux).
type funcBTF struct {
	proto  *btf.FuncProto
	spec   *btf.Spec
	module string
}

// lookup finds a function's BTF: in module mod's BTF when mod is given, else as the kernel's
// btf_find_func_proto() does, in vmlinux's and then in the loaded modules' (those kallsyms
// places the name in). known is false when BTF cannot be read at all: nothing can be checked.
func (k *Kernel) lookup(mod, name string) (f *funcBTF, known bool) {
	if k == nil || k.btf == nil {
		return nil, false
	}
	vm, err := k.btf.Vmlinux()
	if err != nil {
		return nil, false
	}
	mods := []string{mod}
	if mod == "" {
		if p := findFunc(vm, name); p != nil {
			return &funcBTF{p, vm, ""}, true
		}
		mods = k.symbolModules(name)
	}
	for _, m := range mods {
		s, err := k.btf.Module(m)
		if errors.Is(err, tracefs.ErrNoBTF) {
			continue
		}
		if err != nil {
			return nil, false
		}
		if p := findFunc(s, name); p != nil {
			return &funcBTF{p, s, m}, true
		}
	}
	return nil, true
}

// probed is the BTF the kernel uses for a probe on [mod:]name. The kernel looks BTF up by the
// probed symbol's whole text (6.12: ctx->funcname is "MOD:SYM"), which names no function: a
// module-qualified probe has no BTF entry (seen on 6.12: "No BTF entry for this probe point").
func (k *Kernel) probed(mod, name string) (*funcBTF, bool) {
	if k != nil {
		k.lookups++
	}
	if mod != "" {
		if k == nil || k.btf == nil {
			return nil, false
		}
		_, err := k.btf.Vmlinux()
		return nil, err == nil
	}
	return k.lookup("", name)
}

func findFunc(s *btf.Spec, name string) *btf.FuncProto {
	ts, err := s.AnyTypesByName(name)
	if err != nil {
		return nil
	}
	for _, t := range ts {
		if f, ok := t.(*btf.Func); ok {
			if p, ok := f.Type.(*btf.FuncProto); ok {
				return p
			}
		}
	}
	return nil
}

// skipModifiers is btf_type_skip_modifiers(): through typedefs, const, volatile, restrict and
// type tags to the type underneath.
func skipModifiers(t btf.Type) btf.Type { return btf.UnderlyingType(t) }

// members of a struct or union; ok is false for any other type.
func members(t btf.Type) ([]btf.Member, bool) {
	switch v := t.(type) {
	case *btf.Struct:
		return v.Members, true
	case *btf.Union:
		return v.Members, true
	}
	return nil, false
}

// findMember is btf_find_struct_member(): a member by name, looking inside anonymous structs
// and unions too. isStruct is false when t is not a struct or union (the kernel's "Failed to
// get BTF type info.").
func findMember(t btf.Type, name string) (m *btf.Member, isStruct bool) {
	ms, ok := members(t)
	if !ok {
		return nil, false
	}
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i], true
		}
	}
	for i := range ms {
		if ms[i].Name != "" {
			continue
		}
		if in, ok := skipModifiers(ms[i].Type).(*btf.Struct); ok {
			if m, _ := findMember(in, name); m != nil {
				return m, true
			}
		}
		if in, ok := skipModifiers(ms[i].Type).(*btf.Union); ok {
			if m, _ := findMember(in, name); m != nil {
				return m, true
			}
		}
	}
	return nil, true
}

// isChar8 is an unsigned 8-bit integer: what the kernel takes as a character
// (btf_type_is_char_ptr/array; the kernel builds with -funsigned-char since 6.2).
func isChar8(t btf.Type) bool {
	i, ok := skipModifiers(t).(*btf.Int)
	return ok && i.Size == 1 && i.Encoding&btf.Signed == 0
}

// fitsString is check_prepare_btf_string_fetch(): a char array, or a char pointer. As 6.12
// has it: btf_type_is_char_ptr() does not check that the type is a pointer, and reads the
// type's "type" field, which for an integer, enum, struct or union is its size: a size that
// happens to be the type ID of an 8-bit unsigned integer passes (seen: size_t and loff_t
// arguments take :string on 6.12, int and unsigned int do not). spec resolves that ID.
func fitsString(spec *btf.Spec, t btf.Type) bool {
	switch v := t.(type) {
	case *btf.Array:
		return isChar8(v.Type)
	case *btf.Pointer:
		return isChar8(v.Target)
	case *btf.FuncProto:
		return isChar8(v.Return)
	case *btf.Int, *btf.Enum, *btf.Struct, *btf.Union, *btf.Float: // their "type" is their size
	default:
		return false
	}
	size, err := btf.Sizeof(t)
	if spec == nil || err != nil || size <= 0 {
		return false
	}
	at, err := spec.TypeByID(btf.TypeID(size))
	return err == nil && isChar8(at)
}

// CType writes a BTF type as C declares it: "struct file *", "const char *", "size_t".
func CType(t btf.Type) string {
	return cType(t, 0)
}

func cType(t btf.Type, depth int) string {
	if depth > 16 {
		return "..."
	}
	switch v := t.(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Int:
		return v.Name
	case *btf.Float:
		return v.Name
	case *btf.Typedef:
		return v.Name
	case *btf.Struct:
		return "struct " + anon(v.Name)
	case *btf.Union:
		return "union " + anon(v.Name)
	case *btf.Enum:
		return "enum " + anon(v.Name)
	case *btf.Fwd:
		return v.Kind.String() + " " + v.Name
	case *btf.Const:
		return "const " + cType(v.Type, depth+1)
	case *btf.Volatile:
		return "volatile " + cType(v.Type, depth+1)
	case *btf.Restrict:
		return cType(v.Type, depth+1) + " restrict"
	case *btf.TypeTag:
		return cType(v.Type, depth+1)
	case *btf.Pointer:
		if fp, ok := v.Target.(*btf.FuncProto); ok {
			return cType(fp.Return, depth+1) + " (*)(" + paramList(fp, depth+1) + ")"
		}
		s := cType(v.Target, depth+1)
		if !strings.HasSuffix(s, "*") {
			s += " "
		}
		return s + "*"
	case *btf.Array:
		return cType(v.Type, depth+1) + "[" + strconv.FormatUint(uint64(v.Nelems), 10) + "]"
	case *btf.FuncProto:
		return cType(v.Return, depth+1) + " (" + paramList(v, depth+1) + ")"
	}
	return fmt.Sprint(t)
}

func paramList(fp *btf.FuncProto, depth int) string {
	var ps []string
	for _, p := range fp.Params {
		ps = append(ps, cType(p.Type, depth))
	}
	return strings.Join(ps, ", ")
}

func anon(name string) string {
	if name == "" {
		return "(anon)"
	}
	return name
}

// Param is one parameter of a function as BTF describes it.
type Param struct {
	Name string `json:"name"`
	Type string `json:"type"` // C, e.g. "struct file *"
}

// FuncInfo is a function's signature from BTF, or a tracepoint's arguments, for `ftctl probe
// args`.
type FuncInfo struct {
	Kind   string  `json:"kind"` // "function", or "tracepoint" (TracepointArgs)
	Func   string  `json:"func"`
	System string  `json:"system,omitempty"` // a tracepoint's system, when given
	Module string  `json:"module"`           // "" for vmlinux
	Params []Param `json:"params"`
	Return string  `json:"return"`
}

// ErrNoFunc: BTF has no function of that name.
var ErrNoFunc = errors.New("no such function in BTF")

// NoFuncError is a function (or a tracepoint) BTF does not describe, with close names.
type NoFuncError struct {
	Func        string
	Tracepoint  bool
	Suggestions []string
}

func (e *NoFuncError) Error() string {
	msg := fmt.Sprintf("%s: no such function in the kernel's BTF", printable(e.Func))
	if e.Tracepoint {
		msg = fmt.Sprintf("%s: no such tracepoint (the kernel's BTF has no stub __probestub_%s, which a tracepoint probe's arguments come from)",
			printable(e.Func), printable(e.Func[strings.IndexByte(e.Func, ':')+1:]))
	}
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + printable(strings.Join(e.Suggestions, ", ")) + "?"
	}
	return msg
}

// Is makes errors.Is(err, ErrNoFunc) true.
func (e *NoFuncError) Is(target error) bool { return target == ErrNoFunc }

// FuncArgs is a function's parameters and return type, from BTF. ref is FUNC or MODULE:FUNC.
// Errors: a NoFuncError, or the tracefs error of BTF that cannot be read (ErrNoBTF: exit 4).
func (k *Kernel) FuncArgs(ref string) (*FuncInfo, error) {
	mod, name, ok := strings.Cut(ref, ":")
	if !ok {
		mod, name = "", ref
	}
	if _, err := k.btf.Vmlinux(); err != nil {
		return nil, err
	}
	if mod != "" {
		if _, err := k.btf.Module(mod); err != nil {
			return nil, err
		}
	}
	f, _ := k.lookup(mod, name)
	if f == nil {
		e := &NoFuncError{Func: ref}
		if k.Suggest != nil {
			e.Suggestions = k.Suggest(name)
		}
		return nil, e
	}
	info := &FuncInfo{Kind: "function", Func: name, Module: f.module, Params: []Param{}, Return: CType(f.proto.Return)}
	for _, p := range f.proto.Params {
		info.Params = append(info.Params, Param{Name: p.Name, Type: CType(p.Type)})
	}
	return info, nil
}

// btfVar is parse_btf_arg() for a parameter name with its ->field chain, at offset off of the
// current token: the name must be a parameter of the function, each field must be there.
func (st *state) btfVar(s string, off int) error {
	fn, known := st.proto()
	if !known {
		return nil
	}
	name, fields := s, ""
	if i := strings.Index(s, "->"); i >= 0 {
		name, fields = s[:i], s[i+2:]
	}
	if fn == nil || len(fn.Params) == 0 {
		return st.err(off, "No BTF entry for this probe point")
	}
	p := st.param(name)
	if p == nil {
		e := st.err(off, "This variable is not found at this probe point")
		e.Hint = st.paramsHint()
		return e
	}
	st.lastType = skipModifiers(p.Type)
	if fields == "" {
		return nil
	}
	return st.btfFields(fields, off+len(name)+2)
}

// btfRetval is parse_btf_arg() for $retval and $retval->field (rest): with BTF, a function
// returning void has no $retval, and a field needs a pointer to a struct or union.
func (st *state) btfRetval(rest string, off int) error {
	fn, known := st.proto()
	if !known {
		return nil
	}
	if fn == nil {
		if rest != "" {
			return st.err(off+len("$retval->"), "No BTF entry for this probe point")
		}
		return nil
	}
	if _, void := fn.Return.(*btf.Void); void || fn.Return == nil {
		return st.err(off, "This function returns 'void' type")
	}
	st.lastType = skipModifiers(fn.Return)
	if rest == "" {
		return nil
	}
	return st.btfFields(strings.TrimPrefix(rest, "->"), off+len("$retval->"))
}

// btfFields is parse_btf_field(): each "->" step needs a pointer to a struct or union that has
// the member, each "." step a struct or union that has it. off is where fields starts in the
// current token; errors point at the field they are about.
func (st *state) btfFields(fields string, off int) error {
	t := st.lastType
	for fields != "" {
		ptr, ok := t.(*btf.Pointer)
		if !ok {
			e := st.err(off, "This is not a pointer to union/structure.")
			e.Hint = "BTF types it " + CType(t)
			return e
		}
		t = skipModifiers(ptr.Target)
		for {
			name, next, arrow := fields, "", false
			nextOff := off + len(fields)
			if i := strings.IndexAny(fields, ".-"); i >= 0 {
				name = fields[:i]
				if fields[i] == '-' {
					next, arrow, nextOff = fields[i+2:], true, off+i+2
				} else {
					next, nextOff = fields[i+1:], off+i+1
				}
			}
			m, isStruct := findMember(t, name)
			if !isStruct {
				e := st.err(off, "Failed to get BTF type info.")
				e.Hint = "BTF types it " + CType(t) + ", which has no fields"
				return e
			}
			if m == nil {
				e := st.err(off, "This field is not found.")
				e.Hint = CType(t) + " has no member " + name
				return e
			}
			t = skipModifiers(m.Type)
			fields, off = next, nextOff
			if arrow || fields == "" {
				break
			}
		}
	}
	st.lastType = t
	return nil
}

// paramsHint names the function's parameters.
func (st *state) paramsHint() string {
	var ps []string
	for _, p := range st.fn.Params {
		ps = append(ps, p.Name)
	}
	return st.d.Symbol + "'s parameters: " + strings.Join(ps, " ")
}
