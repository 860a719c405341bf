package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ftctl/ftctl/tracefs"
)

// Declared owners. A session lives while its process holds its instance (Session.Start); a
// declared owner is a name under which a set-up lives with no process at all, until it is
// deleted (Undeclare): what a flight recorder or an applied profile needs. Its pieces are named
// after it (instance ftctl-owned-NAME, group ftctl_owned_NAME, synthetic events
// ftctl_owned_NAME_WHAT), names no session can have (a session's hold a pid), so `ftctl reset`
// never takes them for a dead session's: it names them, as kept. Its declaration, written
// before the first write of its set-up and rewritten once it is applied, lives in the state
// directory (owners/NAME.json, root's, on /run: the kernel's state and the declaration go
// together at a reboot); Undeclare tears down from it alone, what was written, newest first,
// and is idempotent, so an apply killed at any moment is finished by deleting its owner.

// ownedPrefix marks the names of a declared owner's pieces.
const ownedPrefix = "owned"

// maxOwnerName bounds an owner's name: the kernel's event names (63 bytes) hold
// ftctl_owned_NAME_WHAT.
const maxOwnerName = 32

// ErrNoOwner: no declared owner of that name.
var ErrNoOwner = errors.New("no such declared owner")

// ErrOwnerExists: a declared owner of that name exists already.
var ErrOwnerExists = errors.New("declared owner exists")

// CheckOwnerName refuses a name that is not 1 to 32 lower-case letters and digits.
func CheckOwnerName(name string) error {
	ok := name != "" && len(name) <= maxOwnerName
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	if !ok {
		return fmt.Errorf("%w: owner name %q: 1 to %d lower-case letters and digits", ErrInvalid, name, maxOwnerName)
	}
	return nil
}

// OwnerID is the identity of the declared owner name: its pieces' names (Instance, Group,
// Synthetic) are ftctl-owned-NAME, ftctl_owned_NAME, ftctl_owned_NAME_WHAT.
func OwnerID(name string) ID { return ID{Owner: name} }

// Owner is a declaration: what a declared owner wrote, for Undeclare, and for people.
type Owner struct {
	Name     string    `json:"name"`
	Instance string    `json:"instance"`
	Group    string    `json:"group"`
	Boot     string    `json:"boot,omitempty"` // the boot it was made in
	Since    time.Time `json:"since"`
	// State: "applying" from before the first write until the set-up is whole, then
	// "applied". An owner found "applying" was interrupted (a SIGKILL, power): Undeclare
	// removes what it had written.
	State    string    `json:"state"`
	Dynamic  []Dynamic `json:"dynamic,omitempty"`
	Triggers []Trigger `json:"triggers,omitempty"`
	// Events, Probes and Filters describe the rest of the set-up for people; the instance
	// holds them, and goes with it.
	Events  []string `json:"events,omitempty"`
	Probes  []string `json:"probes,omitempty"`
	Filters []string `json:"filters,omitempty"`
	// Source is what the owner was declared from (Spec.Source: a profile, as JSON), for the
	// next apply to compare with.
	Source json.RawMessage `json:"source,omitempty"`
	// Derived is what the declarer worked out from Source against the kernel (Spec.Derived:
	// a profile's globs as resolved, with what they were resolved against); session neither
	// reads nor trusts it, and the declarer checks it before use.
	Derived json.RawMessage `json:"derived,omitempty"`
	// TopLevel is what the owner holds of the top level (Spec.ClaimTop): nil, nothing.
	TopLevel *TopClaim `json:"topLevel,omitempty"`
}

// TopClaim is a declared owner's claim of the top level: the top-level files its graph
// writes, each with what it held before the owner's first write of it, saved in the
// declaration before that write. While it holds the claim, no graph session and no other
// owner takes them (graphFree); Undeclare puts each back as it was, newest first.
type TopClaim struct {
	// Whole: function_graph runs at the top level (the instances cannot run it), so the
	// owner holds the top level whole: its tracer and tracing_on too.
	Whole   bool           `json:"whole"`
	Entries []JournalEntry `json:"entries"`
}

// Files names the top-level files the claim holds, in the order of their first write.
func (c *TopClaim) Files() []string {
	var out []string
	for _, e := range c.Entries {
		out = append(out, e.File)
	}
	return out
}

// topJournal is the journal of o's claim, kept in its declaration.
func (o *Owner) topJournal(fs *tracefs.FS) *journal {
	return &journal{Session: OwnerID(o.Name), Boot: o.Boot, Entries: slices.Clone(o.TopLevel.Entries), dry: fs.DryRun != nil, claimed: true,
		saver: func(es []JournalEntry) error {
			o.TopLevel.Entries = slices.Clone(es)
			if o.TopLevel.Entries == nil {
				o.TopLevel.Entries = []JournalEntry{}
			}
			return o.save(fs)
		}}
}

// TopClaimedBy refuses the top level's function_graph files when a declared owner other
// than owner claims them (ErrBusy, naming it).
func TopClaimedBy(fs *tracefs.FS, owner string) error { return topClaimed(fs, OwnerID(owner)) }

// topClaimed refuses the top level's function_graph files to anyone but the declared owner
// that claims them (self: a session's ID is no owner's).
func topClaimed(fs *tracefs.FS, self ID) error {
	owners, _ := Owners(fs) // a declaration that cannot be read claims nothing that can be told
	for _, o := range owners {
		if o.TopLevel != nil && o.Name != self.Owner {
			return &tracefs.Error{Op: "read", Path: ownerPath(fs, o.Name), Class: tracefs.ErrBusy,
				Reason: fmt.Sprintf("the declared owner %s claims the top level's function_graph files (%s); 'ftctl delete' of its profile gives them back",
					o.Name, strings.Join(o.TopLevel.Files(), ", "))}
		}
	}
	return nil
}

// ownersDir is where declarations live.
func ownersDir(fs *tracefs.FS) string { return filepath.Join(stateDir(fs), "owners") }

func ownerPath(fs *tracefs.FS, name string) string {
	return filepath.Join(ownersDir(fs), name+".json")
}

// save writes the declaration durably (a temporary file fsynced, renamed, the directory
// fsynced), in a root-only directory.
func (o *Owner) save(fs *tracefs.FS) error {
	if fs.DryRun != nil {
		return nil
	}
	if err := os.MkdirAll(stateDir(fs), 0o700); err != nil {
		return err
	}
	if err := tracefs.CheckStateDir(stateDir(fs)); err != nil {
		return err
	}
	path := ownerPath(fs, o.Name)
	if err := saveState(path, o); err != nil {
		return fmt.Errorf("writing the declaration %s: %w", path, err)
	}
	return nil
}

// Declare applies spec under the declared owner name, which no process holds: the declaration
// first, then the set-up (Session.Start) with tracing turned on at the end, then the
// declaration marked applied. On failure what was written is removed, the declaration too. The
// caller holds the tracefs lock. A graph set-up writes kernel-wide files, which no process is
// there to put back: it is declared only under a claim of the top level (Spec.ClaimTop; else
// ErrInvalid), its journal kept in the declaration (Owner.TopLevel) for Undeclare.
func Declare(fs *tracefs.FS, name string, spec Spec) (*Owner, error) {
	if err := CheckOwnerName(name); err != nil {
		return nil, err
	}
	if spec.Graph != nil && !spec.ClaimTop {
		return nil, fmt.Errorf("%w: a declared owner runs a graph only where it claims the top level (its kernel-wide files are the top level's)", ErrInvalid)
	}
	if _, err := os.Lstat(ownerPath(fs, name)); err == nil {
		return nil, fmt.Errorf("%w: %s (%s)", ErrOwnerExists, name, ownerPath(fs, name))
	}
	// The declaring process goes away, and its thread ids are reused by others: none is left
	// out of the owner's instance (Spec.IncludeSelf).
	spec.IncludeSelf = true
	// No process holds it to put back, at its end, what it changed outside its own.
	spec.InstanceOnly = true
	id := OwnerID(name)
	if in, err := fs.Existing(id.Instance()); err == nil && in.Has("tracing_on") {
		return nil, fmt.Errorf("%w: %s: instance %s exists without a declaration ('ftctl reset --all' removes it)", ErrOwnerExists, name, id.Instance())
	}
	s, err := New(fs, id, spec)
	if err != nil {
		return nil, err
	}
	o := &Owner{Name: name, Instance: id.Instance(), Group: id.Group(), Boot: fs.BootID(), Since: time.Now().UTC().Truncate(time.Second),
		State: "applying", Dynamic: s.spec.Dynamic, Triggers: s.spec.Triggers, Events: append(slices.Clone(s.spec.Events), s.late...), Probes: spec.Probes,
		Source: spec.Source, Derived: spec.Derived}
	for _, p := range spec.Filters {
		o.Filters = append(o.Filters, p.Text)
	}
	if spec.Graph != nil {
		// saved before the first write of the top level: empty until then
		o.TopLevel = &TopClaim{Entries: []JournalEntry{}}
		s.topJournal = o.topJournal(fs)
	}
	if err := o.save(fs); err != nil {
		return nil, err
	}
	fail := func(err error) (*Owner, error) {
		if rerr := removeDeclaration(fs, name); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	if err := s.Start(context.Background()); err != nil { // torn down by Start
		return fail(err)
	}
	if err := s.Begin(); err != nil {
		return fail(errors.Join(append([]error{err}, s.Teardown()...)...))
	}
	s.Release() // no process holds a declared owner's instance
	if o.TopLevel != nil {
		o.TopLevel.Whole = s.GraphAtTop()
	}
	o.State = "applied"
	if err := o.save(fs); err != nil {
		return o, err
	}
	return o, nil
}

// Owners lists the declarations, by name. One that does not parse is named in the error,
// and the others are listed.
func Owners(fs *tracefs.FS) ([]*Owner, error) {
	if err := tracefs.CheckStateDir(stateDir(fs)); err != nil {
		return nil, err
	}
	dir := ownersDir(fs)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the owners' directory %s: %w", dir, err)
	}
	var out []*Owner
	var bad []error
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		o, err := readOwner(fs, name)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(bad...)
}

// ReadOwner reads the declaration of the declared owner name (ErrNoOwner when there is none).
func ReadOwner(fs *tracefs.FS, name string) (*Owner, error) {
	if err := CheckOwnerName(name); err != nil {
		return nil, err
	}
	if err := tracefs.CheckStateDir(stateDir(fs)); err != nil {
		return nil, err
	}
	return readOwner(fs, name)
}

// MarkOwner rewrites the declaration of o with state ("applying" before a change to its
// set-up's files, "applied" after) and source (what it is now declared from), durably, before
// the caller writes or once it has.
func MarkOwner(fs *tracefs.FS, o *Owner, state string, source []byte) error {
	o.State, o.Source = state, source
	return o.save(fs)
}

// readOwner reads the declaration of name, checked to be that owner's (its pieces' names
// are the owner's own: a declaration cannot make Undeclare remove anything else).
func readOwner(fs *tracefs.FS, name string) (*Owner, error) {
	path := ownerPath(fs, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoOwner, name)
	}
	if err != nil {
		return nil, err
	}
	var o Owner
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrJournal, path, err)
	}
	id := OwnerID(name)
	if CheckOwnerName(name) != nil || o.Name != name || o.Instance != id.Instance() || o.Group != id.Group() {
		return nil, fmt.Errorf("%w: %s does not describe the owner %s", ErrJournal, path, name)
	}
	for _, d := range o.Dynamic {
		if d.Kind == 's' && !strings.HasPrefix(d.Event, id.Group()+"_") || !validEventName(d.Event) {
			return nil, fmt.Errorf("%w: %s: event %q is not the owner's", ErrJournal, path, d.Event)
		}
	}
	return &o, nil
}

// Undeclare tears the declared owner name down from its declaration: its triggers newest
// first, then its dynamic events newest first, its instance (tracing off, nop, events off,
// removed), the probes of its group; then the declaration. Each step is attempted even when an
// earlier one failed, and what is gone already is done: a second Undeclare finishes what the
// first could not. The caller holds the tracefs lock.
func Undeclare(fs *tracefs.FS, name string) (*Owner, error) {
	if err := CheckOwnerName(name); err != nil {
		return nil, err
	}
	o, err := readOwner(fs, name)
	if err != nil {
		return nil, err
	}
	id := OwnerID(name)
	s := &Session{FS: fs, ID: id, Group: id.Group(), Notice: func(string, ...any) {}}
	if in, err := fs.Existing(o.Instance); err == nil && in.Has("tracing_on") {
		s.Instance = in
		// (an instance gone took its triggers with it)
		for _, t := range o.Triggers {
			s.triggers = append(s.triggers, trigger{"events/" + t.System + "/" + t.Event, t.Text})
		}
	}
	for _, d := range o.Dynamic {
		file, remove := "kprobe_events", "-:"+id.Group()+"/"+d.Event+"\n"
		switch d.Kind {
		case 'f':
			file = "dynamic_events"
		case 's':
			file, remove = "synthetic_events", "!"+d.Event+"\n"
		}
		s.dynamic = append(s.dynamic, dynamicEvent{file, remove})
	}
	s.spec.Dynamic = o.Dynamic
	if o.TopLevel != nil {
		// its claim: put back after its instance's tracer is stopped (Teardown); where the
		// graph ran at the top level, the journal names its tracer, put back first
		j := o.topJournal(fs)
		st := &graphState{journal: j, in: fs.Top(), top: j.entry("current_tracer") != nil}
		if s.Instance != nil && !st.top {
			st.in = s.Instance
		}
		s.graph = st
	}
	for _, e := range o.Events {
		if s.definesSynthetic(e) {
			s.late = append(s.late, e)
		}
	}
	errs := s.Teardown()
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	return o, removeDeclaration(fs, name)
}

func removeDeclaration(fs *tracefs.FS, name string) error {
	if fs.DryRun != nil {
		return nil
	}
	if err := os.Remove(ownerPath(fs, name)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("removing the declaration of %s: %w", name, err)
	}
	if err := syncDir(ownersDir(fs)); err != nil {
		return err
	}
	// the last one takes the directory with it (ENOTEMPTY while others are left)
	if os.Remove(ownersDir(fs)) == nil {
		return syncDir(stateDir(fs))
	}
	return nil
}
