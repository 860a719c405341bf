package tracefs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"
)

// BTFDir holds the kernel's BTF: "vmlinux" for the kernel itself and one file per loaded module
// that was built with BTF (CONFIG_DEBUG_INFO_BTF, CONFIG_DEBUG_INFO_BTF_MODULES).
const BTFDir = "/sys/kernel/btf"

// ErrNoBTF: the kernel (or the module) exposes no BTF. It wraps ErrUnavailable.
var ErrNoBTF = fmt.Errorf("no BTF: %w", ErrUnavailable)

// BTF is the kernel's type information, read lazily: vmlinux's BTF is 5-6 MiB, read once, on
// the first question, and kept for the BTF's life (one command, or one console). A module's
// BTF is read once too, split on vmlinux's. Safe for concurrent use.
type BTF struct {
	dir     string
	vmlinux func() (*btf.Spec, error)

	mu      sync.Mutex
	modules map[string]moduleBTF
	enums   func() (map[string]EnumConst, error)
}

// EnumConst is an enumerator's value and the type C gives it: int when the value fits,
// otherwise its enum's (GCC's extension).
type EnumConst struct {
	Value  uint64
	Size   uint8 // 4 or 8
	Signed bool
}

type moduleBTF struct {
	spec *btf.Spec
	err  error
}

// BTF is the kernel's BTF as this FS sees it (FS.BTFDir replaces /sys/kernel/btf: a fixture
// in tests). Each call returns a new, unread BTF: hold on to it for a command.
func (f *FS) BTF() *BTF {
	dir := f.BTFDir
	if dir == "" {
		dir = BTFDir
	}
	b := &BTF{dir: dir, modules: map[string]moduleBTF{}}
	b.vmlinux = sync.OnceValues(func() (*btf.Spec, error) { return b.load("vmlinux", nil) })
	b.enums = sync.OnceValues(b.readEnums)
	return b
}

// Enum is the value of the enumerator name among vmlinux's enums: what a print fmt names when
// the kernel's eval map did not replace it (an enum no TRACE_DEFINE_ENUM of the event's system
// declares, such as tcp_send_reset's TCP_ESTABLISHED). ok is false when no enum has it, or two
// give it different values (static enums of two files): a value is never guessed. The first
// call reads every type of vmlinux's BTF (a third of a second here, seconds under emulation).
func (b *BTF) Enum(name string) (c EnumConst, ok bool, err error) {
	m, err := b.enums()
	if err != nil {
		return c, false, err
	}
	c, ok = m[name]
	return c, ok && c.Size != 0, nil
}

func (b *BTF) readEnums() (map[string]EnumConst, error) {
	s, err := b.vmlinux()
	if err != nil {
		return nil, err
	}
	m := map[string]EnumConst{}
	for t, err := range s.All() {
		if err != nil {
			return nil, err
		}
		e, ok := t.(*btf.Enum)
		if !ok {
			continue
		}
		for _, v := range e.Values {
			// the enumerator as a number: a signed enum's value sign-extended from its size
			x, inInt := v.Value, v.Value <= math.MaxInt32
			if e.Signed {
				if e.Size < 8 {
					x = uint64(int64(int32(x)))
				}
				inInt = int64(x) >= math.MinInt32 && int64(x) <= math.MaxInt32
			}
			c := EnumConst{Value: x, Size: 4, Signed: true}
			if !inInt {
				c.Signed = e.Signed
				if e.Size == 8 {
					c.Size = 8
				}
			}
			if old, seen := m[v.Name]; seen && old != c {
				m[v.Name] = EnumConst{} // two values: none
				continue
			}
			m[v.Name] = c
		}
	}
	return m, nil
}

// Available says whether the kernel exposes its BTF (the file exists; nothing is read).
func (b *BTF) Available() bool {
	_, err := os.Stat(filepath.Join(b.dir, "vmlinux"))
	return err == nil
}

// Vmlinux is the kernel's own BTF. ErrNoBTF when the kernel has none.
func (b *BTF) Vmlinux() (*btf.Spec, error) { return b.vmlinux() }

// Module is a loaded module's BTF (split on vmlinux's). ErrNoBTF when the module is not loaded
// or was built without BTF.
func (b *BTF) Module(name string) (*btf.Spec, error) {
	if name == "" || name == "vmlinux" || strings.ContainsAny(name, "/\x00") || name[0] == '.' {
		return nil, fmt.Errorf("module %q: %w", name, ErrNoBTF)
	}
	base, err := b.vmlinux()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if m, ok := b.modules[name]; ok {
		return m.spec, m.err
	}
	s, err := b.load(name, base)
	b.modules[name] = moduleBTF{s, err}
	return s, err
}

// load reads one BTF file whole (the library then decodes types as they are asked for).
func (b *BTF) load(name string, base *btf.Spec) (*btf.Spec, error) {
	path := filepath.Join(b.dir, name)
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{Op: "open", Path: path, Class: ErrNoBTF, Errno: unwrapPath(err),
			Reason: "no BTF: a kernel built without CONFIG_DEBUG_INFO_BTF, or a module not loaded or built without BTF"}
	case err != nil:
		return nil, (&FS{}).opError("read", path, "", unwrapPath(err))
	}
	var s *btf.Spec
	if base == nil {
		s, err = btf.LoadSpecFromReader(bytes.NewReader(raw))
	} else {
		s, err = btf.LoadSplitSpecFromReader(bytes.NewReader(raw), base)
	}
	if err != nil {
		return nil, &Error{Op: "read", Path: path, Class: ErrIO, Errno: err, Reason: "the BTF cannot be decoded"}
	}
	return s, nil
}
