package eventfilter

import (
	"slices"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// FieldKind is how the kernel's filter treats a field (its filter_type).
type FieldKind int

const (
	// FieldNumber: any other field (FILTER_OTHER): numbers, CPUS{}.
	FieldNumber FieldKind = iota
	// FieldString: char arrays, __data_loc/__rel_loc char[], char pointers, comm: quoted
	// strings with ==, != and ~.
	FieldString
	// FieldCPU: the generic cpu fields (FILTER_CPU): numbers, CPUS{}.
	FieldCPU
	// FieldCPUMask: __data_loc cpumask_t (FILTER_CPUMASK, 6.6+): numbers, CPUS{}.
	FieldCPUMask
	// FieldAny: a field of unknown type (the syntax check without an event): every value
	// the grammar allows.
	FieldAny
)

// Field is what the filter parser knows of a field.
type Field struct {
	Name   string
	Type   string // as the format file declares it ("char[16]", "__data_loc char[]", "pid_t")
	Kind   FieldKind
	Size   int // bytes; 0 for the generic fields
	Signed bool
}

// filterKind is the kernel's filter_assign_type() of a declared type.
func filterKind(decl string) FieldKind {
	switch {
	case strings.Contains(decl, "__data_loc") && strings.Contains(decl, "char"):
		return FieldString
	case strings.Contains(decl, "__data_loc") && strings.Contains(decl, "cpumask_t"):
		return FieldCPUMask
	case strings.Contains(decl, "__rel_loc") && strings.Contains(decl, "char"):
		return FieldString
	case strings.Contains(decl, "[") && strings.Contains(decl, "char"):
		return FieldString
	case decl == "char *" || decl == "const char *":
		return FieldString
	}
	return FieldNumber
}

// genericFields are the kernel's ftrace_generic_fields (trace_events.c
// trace_define_generic_fields), found after an event's own fields and before the common ones.
// 6.12 also has stacktrace/STACKTRACE, which a filter cannot usefully compare (the kernel
// picks no comparison for a field of size 0): ftctl does not offer them.
var genericFields = []Field{
	{Name: "CPU", Type: "int", Kind: FieldCPU, Signed: true},
	{Name: "cpu", Type: "int", Kind: FieldCPU, Signed: true},
	{Name: "common_cpu", Type: "int", Kind: FieldCPU, Signed: true},
	{Name: "COMM", Type: "char *", Kind: FieldString},
	{Name: "comm", Type: "char *", Kind: FieldString},
}

// Fields is the fields a filter on an event can name, in the kernel's order of lookup:
// the event's own, the generic ones, the common ones.
type Fields struct {
	Event  string // "SYSTEM:EVENT", for messages
	Own    []Field
	Common []Field // common_* of the format file
}

// FieldsOf lists the fields of an event's format for its filter.
func FieldsOf(f *tracefs.Format) *Fields {
	ff := &Fields{Event: f.System + ":" + f.Name}
	conv := func(fl tracefs.Field) Field {
		decl := fl.Decl()
		return Field{Name: fl.Name, Type: decl, Kind: filterKind(decl), Size: fl.Size, Signed: fl.Signed}
	}
	for _, fl := range f.Fields {
		ff.Own = append(ff.Own, conv(fl))
	}
	for _, fl := range f.Common {
		ff.Common = append(ff.Common, conv(fl))
	}
	return ff
}

// Lookup is the kernel's trace_find_event_field(): own fields, generic, common.
func (ff *Fields) Lookup(name string) (Field, bool) {
	for _, list := range [][]Field{ff.Own, genericFields, ff.Common} {
		for _, f := range list {
			if f.Name == name {
				return f, true
			}
		}
	}
	return Field{}, false
}

// names lists the field names for a message: own first, then the rest.
func (ff *Fields) names() (own, other []string) {
	for _, f := range ff.Own {
		own = append(own, f.Name)
	}
	for _, f := range ff.Common {
		other = append(other, f.Name)
	}
	for _, f := range genericFields {
		if (f.Name == "cpu" || f.Name == "comm") && !slices.Contains(own, f.Name) {
			other = append(other, f.Name)
		}
	}
	return own, other
}
