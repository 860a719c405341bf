package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ftctl/ftctl/filters"
	"github.com/ftctl/ftctl/session"
	"github.com/ftctl/ftctl/tracefs"
)

// Result is what an apply did.
type Result struct {
	Profile  string `json:"profile"`
	Instance string `json:"instance"`
	// Action: "none" (the kernel held the profile: nothing written), "created" (a new
	// owner), "updated" (changes written in place), "recreated" (the owner set up again).
	Action string `json:"action"`
	// Changed: anything was written (Ansible's "changed").
	Changed bool     `json:"changed"`
	Changes []Change `json:"changes"`
	// Restored: the apply failed and the state before it was put back.
	Restored bool `json:"restored,omitempty"`
}

// applyCtx is what a change's write and undo act on.
type applyCtx struct {
	ctx    context.Context
	fs     *tracefs.FS
	in     *tracefs.Instance
	notice func(string, ...any)
}

func (a *applyCtx) applier() *filters.Applier {
	return &filters.Applier{In: a.in, Top: a.fs.Top(), Notice: a.notice, ByName: !a.fs.IndexWrites()}
}

// ErrRestored wraps the failure of an apply whose earlier writes were undone: the kernel is as
// it was before it.
var ErrRestored = errors.New("the state before the apply was restored")

// Apply brings the kernel to the plan's profile: a new owner is declared (session.Declare:
// its declaration written first, its set-up in the safe order, torn down whole on failure);
// an owner whose definitions changed is set up again, and on failure the previous profile's
// set-up is put back; other differences are written in place in the plan's order (settings,
// function lists by the swap protocol, event filters, events, tracer, tracing_on), each
// undone, newest first, when a later one fails. A plan in sync writes nothing. The caller
// holds the tracefs lock, from Compute on.
func (pl *Plan) Apply(ctx context.Context, fs *tracefs.FS, notice func(string, ...any)) (*Result, error) {
	res := &Result{Profile: pl.Profile, Instance: pl.Instance, Action: "none", Changes: pl.Changes}
	if pl.InSync() {
		if pl.fresh != nil && fs.DryRun == nil {
			// the kernel holds the profile, and the globs were resolved afresh: the
			// declaration keeps that (nothing is written to the kernel)
			pl.owner.Derived = pl.derived()
			return res, session.MarkOwner(fs, pl.owner, pl.owner.State, pl.owner.Source)
		}
		return res, nil
	}
	source, err := json.Marshal(pl.profile)
	if err != nil {
		return res, err
	}
	res.Changed = true
	switch {
	case !pl.Declared:
		res.Action = "created"
		return res, pl.declare(fs, pl.profile, source, pl.derived())
	case pl.Recreates():
		res.Action = "recreated"
		return res, pl.recreate(fs, source, res)
	}
	res.Action = "updated"
	in, err := fs.Existing(pl.Instance)
	if err != nil {
		return res, err
	}
	a := &applyCtx{ctx: ctx, fs: fs, in: in, notice: notice}
	if err := session.MarkOwner(fs, pl.owner, "applying", pl.owner.Source); err != nil {
		return res, err
	}
	for k, c := range pl.Changes {
		if err := c.write(a); err != nil {
			err = fmt.Errorf("%s (%s): %w", c.Object, c.File, err)
			var undo []error
			for i := k - 1; i >= 0; i-- {
				if uerr := pl.Changes[i].undo(a); uerr != nil {
					undo = append(undo, fmt.Errorf("undoing %s (%s): %w", pl.Changes[i].Object, pl.Changes[i].File, uerr))
				}
			}
			if merr := session.MarkOwner(fs, pl.owner, "applied", pl.owner.Source); merr != nil {
				undo = append(undo, merr)
			}
			if len(undo) > 0 {
				return res, errors.Join(append([]error{err}, undo...)...)
			}
			res.Restored = true
			return res, fmt.Errorf("%w; %w", err, ErrRestored)
		}
	}
	pl.owner.Derived = pl.derived()
	return res, session.MarkOwner(fs, pl.owner, "applied", source)
}

// profileWords name a session's fields as a profile does, for the engine's errors.
var profileWords = map[session.Field]string{
	session.FieldTracer: "spec.instance.tracer", session.FieldFunctions: "spec.functions", session.FieldProbe: "spec.probes",
	session.FieldEvent: "spec.events", session.FieldEventFilter: "spec.events[].filter", session.FieldBufferKB: "spec.instance.bufferKB",
	session.FieldClock: "spec.instance.clock", session.FieldOption: "spec.instance.options",
}

// declare declares p's owner (its declaration keeping source and derived) and, where p keeps
// tracing off, turns it off.
func (pl *Plan) declare(fs *tracefs.FS, p *Profile, source, derived []byte) error {
	spec, err := p.SessionSpec()
	if err != nil {
		return err
	}
	spec.Source, spec.Derived = source, derived
	if _, err := session.Declare(fs, p.Metadata.Name, spec); err != nil {
		return session.Reword(err, profileWords)
	}
	if !p.tracingOn() {
		in, err := fs.Existing(p.InstanceName())
		if err != nil {
			return err
		}
		return in.SetTracingOn(false)
	}
	return nil
}

// recreate tears the owner down and declares it from the profile; on failure it declares it
// again from the profile it was applied from.
func (pl *Plan) recreate(fs *tracefs.FS, source []byte, res *Result) error {
	old := pl.declared()
	if _, err := session.Undeclare(fs, pl.Profile); err != nil {
		return fmt.Errorf("tearing the previous set-up of %s down: %w", pl.Profile, err)
	}
	if fs.DryRun != nil {
		fmt.Fprintf(fs.DryRun, "dry-run: (then %s is set up as on a kernel without it: 'ftctl --dry-run apply' after 'ftctl delete' shows those writes)\n", pl.Profile)
		return nil
	}
	err := pl.declare(fs, pl.profile, source, pl.derived())
	if err == nil {
		return nil
	}
	if old == nil {
		return fmt.Errorf("%w (the previous set-up cannot be put back: its declaration did not keep its profile)", err)
	}
	if rerr := pl.declare(fs, old, pl.owner.Source, pl.owner.Derived); rerr != nil {
		return errors.Join(err, fmt.Errorf("putting the previous set-up back: %w", rerr))
	}
	res.Restored = true
	return fmt.Errorf("%w; %w (set up again: what its ring held is lost)", err, ErrRestored)
}

// Delete tears down what the profile owns (session.Undeclare), newest first, and nothing
// else. A profile that is not applied: session.ErrNoOwner.
func Delete(fs *tracefs.FS, p *Profile) (*session.Owner, error) {
	return session.Undeclare(fs, p.Metadata.Name)
}
