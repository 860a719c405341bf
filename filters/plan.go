package filters

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ftctl/ftctl/tracefs"
)

// The two function lists of a trace array.
const (
	FilterFile  = "set_ftrace_filter"
	NotraceFile = "set_ftrace_notrace"
)

// Op is what a change does to a list.
type Op int

const (
	OpSet    Op = iota // the list becomes exactly what the patterns select
	OpAdd              // what the patterns select is added
	OpRemove           // what the patterns select is removed
	OpClear            // the list is emptied (a filter then traces every function)
)

func (o Op) String() string {
	return [...]string{"set", "add", "remove", "clear"}[o]
}

// Change is one intended change of one list, by patterns.
type Change struct {
	File     string
	Op       Op
	Patterns []*Pattern
}

// ErrWouldEmpty: a change other than an explicit clear would leave set_ftrace_filter empty,
// which the kernel reads as "trace every function".
var ErrWouldEmpty = errors.New("the filter would become empty, which traces every function")

// Multiset counts function records per key: what a list holds, as the kernel lists it.
type Multiset map[Key]int

// Total is the number of records.
func (m Multiset) Total() int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// Equal compares two multisets.
func (m Multiset) Equal(o Multiset) bool {
	if len(m) != len(o) {
		return false
	}
	for k, c := range m {
		if o[k] != c {
			return false
		}
	}
	return true
}

// Delta lists the functions m has more of than o (missing from o) and those o has more of
// than m (extra in o), each sorted.
func (m Multiset) Delta(o Multiset) (missing, extra []string) {
	for k, c := range m {
		if o[k] < c {
			missing = append(missing, k.String())
		}
	}
	for k, c := range o {
		if m[k] < c {
			extra = append(extra, k.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

// Diff describes how o differs from m, briefly, for error messages.
func (m Multiset) Diff(o Multiset) string {
	missing, extra := m.Delta(o)
	cut := func(s []string) string {
		if len(s) > 5 {
			return strings.Join(s[:5], ", ") + fmt.Sprintf(" and %d more", len(s)-5)
		}
		return strings.Join(s, ", ")
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+cut(missing))
	}
	if len(extra) > 0 {
		parts = append(parts, "unexpected "+cut(extra))
	}
	return strings.Join(parts, "; ")
}

// ListedSet is the multiset of function records a list file shows.
func ListedSet(l tracefs.FunctionList) Multiset {
	m := make(Multiset, len(l.Names))
	for _, n := range l.Names {
		m[ParseKey(n)]++
	}
	return m
}

// SetOf is the multiset of the given records.
func (ix *Index) SetOf(recs []int) Multiset {
	m := make(Multiset, len(recs))
	for _, i := range recs {
		m[ix.Key(i)]++
	}
	return m
}

// Step is one list file's transition, planned as index writes: Add first, then Remove, in one
// open; Expect is what the kernel must list afterwards.
type Step struct {
	File     string
	Op       Op
	Before   Multiset
	Expect   Multiset
	Add      []int // 1-based indexes, ascending
	Remove   []int
	Truncate bool // OpClear: an O_TRUNC open, the kernel's own way to empty a list
	// Vanished (PlanRestore only): functions of the list to restore that no longer exist.
	Vanished []Key
}

// PlanStep resolves a change against the index and the list's current contents. It is pure:
// the swap protocol's arithmetic, tested without a kernel.
//
//	set:    Add = R; Remove = every record of a key now listed that is not in R; Expect = R
//	add:    Add = R; Expect = Before, with every key of R at its full record count
//	remove: Remove = R; Expect = Before without the keys of R
//
// R is the union of what the patterns select (each must select something). Removing by index a
// record that is not in the list is a no-op in the kernel, which is what makes "every record of
// a listed key" exact even for duplicated names, whose listed records cannot be told apart.
func PlanStep(ix *Index, before Multiset, ch Change) (Step, error) {
	r, err := ch.resolve(ix)
	if err != nil {
		return Step{File: ch.File, Op: ch.Op, Before: before}, err
	}
	return planResolved(ix, before, ch, r)
}

// resolve is what the change's patterns select (nothing for a clear).
func (ch Change) resolve(ix *Index) ([]int, error) {
	if ch.Op == OpClear {
		return nil, nil
	}
	return ix.ResolveAll(ch.Patterns)
}

// planResolved is PlanStep with the patterns already resolved to r.
func planResolved(ix *Index, before Multiset, ch Change, r []int) (Step, error) {
	st := Step{File: ch.File, Op: ch.Op, Before: before}
	if ch.Op == OpClear {
		st.Truncate = true
		st.Expect = Multiset{}
		return st, nil
	}
	switch ch.Op {
	case OpSet:
		st.Add = r
		st.Expect = ix.SetOf(r)
		inR := make(map[int]bool, len(r))
		for _, i := range r {
			inR[i] = true
		}
		for k := range before {
			for _, i := range ix.RecordsOf(k) {
				if !inR[i] {
					st.Remove = append(st.Remove, i)
				}
			}
		}
		sort.Ints(st.Remove)
	case OpAdd:
		st.Add = r
		st.Expect = copySet(before)
		for k := range ix.SetOf(r) {
			st.Expect[k] = ix.Count(k)
		}
	case OpRemove:
		st.Remove = r
		st.Expect = copySet(before)
		for k := range ix.SetOf(r) {
			delete(st.Expect, k)
		}
	}
	if ch.File == FilterFile && len(st.Expect) == 0 {
		return st, fmt.Errorf("%w; use 'ftctl filter clear' if that is what you want", ErrWouldEmpty)
	}
	return st, nil
}

// PlanRestore plans putting a list back to a multiset recorded earlier, with fresh indexes. For
// a key listed fewer times than it has records (only raw index writes make that), the first
// records are chosen: listings cannot tell which ones they were.
//
// A function of want that no longer exists (its module was unloaded since) cannot be put back:
// it is left out and named in Step.Vanished, which is also what the kernel shows after such an
// unload. Only a truly empty want empties the list (for the filter with O_TRUNC, the kernel's
// way); a filter whose every function vanished is not put back at all (VanishedError): the
// empty filter that would leave traces every function.
func PlanRestore(ix *Index, current, want Multiset, file string) (Step, error) {
	st := Step{File: file, Op: OpSet, Before: current, Expect: Multiset{}}
	keep := make(map[int]bool)
	for k, c := range want {
		recs := ix.RecordsOf(k)
		if len(recs) == 0 {
			st.Vanished = append(st.Vanished, k)
			continue
		}
		if len(recs) > c {
			recs = recs[:c]
		}
		for _, i := range recs {
			keep[i] = true
			st.Add = append(st.Add, i)
		}
		st.Expect[k] = len(recs)
	}
	sort.Slice(st.Vanished, func(i, j int) bool { return st.Vanished[i].String() < st.Vanished[j].String() })
	if file == FilterFile && len(want) > 0 && len(st.Expect) == 0 {
		return st, &VanishedError{File: file, Keys: st.Vanished}
	}
	for k := range current {
		for _, i := range ix.RecordsOf(k) {
			if !keep[i] {
				st.Remove = append(st.Remove, i)
			}
		}
	}
	sort.Ints(st.Add)
	sort.Ints(st.Remove)
	if len(want) == 0 && file == FilterFile {
		st.Truncate = true // it was empty: the only way back
	}
	return st, nil
}

// VanishedError: a filter cannot be put back because none of the functions it held exists any
// more (their module was unloaded); putting back what remains would empty it, and an empty
// filter traces every function. The list is left as it is.
type VanishedError struct {
	File string
	Keys []Key // the functions that are gone, sorted
}

func (e *VanishedError) Error() string {
	names := make([]string, 0, min(len(e.Keys), 6))
	for i, k := range e.Keys {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(e.Keys)-5))
			break
		}
		names = append(names, k.String())
	}
	return fmt.Sprintf("cannot put %s back: none of its functions exists any more (%s: gone with their module), "+
		"and an empty filter traces every function; %s was left as it is", e.File, strings.Join(names, ", "), e.File)
}

func copySet(m Multiset) Multiset {
	c := make(Multiset, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// IndexTokens renders a step as index writes: additions, then "!" removals.
func (st Step) IndexTokens(ix *Index) []tracefs.Token {
	toks := make([]tracefs.Token, 0, len(st.Add)+len(st.Remove))
	for _, i := range st.Add {
		toks = append(toks, tracefs.Token{Text: strconv.Itoa(i), Note: "+ " + ix.Key(i).String()})
	}
	for _, i := range st.Remove {
		toks = append(toks, tracefs.Token{Text: "!" + strconv.Itoa(i), Note: "- " + ix.Key(i).String()})
	}
	return toks
}

// NameTokens renders a step as name writes, for kernels without index writes: one token per
// key, module-qualified where the name also exists elsewhere ("name:mod:MODULE", and
// "name:mod:!*" for the core kernel's copy). Same order: additions, then removals.
func (st Step) NameTokens(ix *Index) []tracefs.Token {
	var toks []tracefs.Token
	emit := func(recs []int, neg string, sign string) {
		seen := make(map[Key]bool)
		for _, i := range recs {
			k := ix.Key(i)
			if seen[k] {
				continue
			}
			seen[k] = true
			text := k.Name
			if ix.nameInOtherModules(k) {
				if k.Module == "" {
					text += ":mod:!*"
				} else {
					text += ":mod:" + k.Module
				}
			}
			toks = append(toks, tracefs.Token{Text: neg + text, Note: sign + " " + k.String()})
		}
	}
	emit(st.Add, "", "+")
	emit(st.Remove, "!", "-")
	return toks
}

// nameInOtherModules: is k's name also the name of a record with another module?
func (ix *Index) nameInOtherModules(k Key) bool {
	ix.lookup()
	for _, pos := range ix.byName[k.Name] {
		if ix.Records[pos].Module != k.Module {
			return true
		}
	}
	return false
}
