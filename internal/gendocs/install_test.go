package main

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestInstallAndUninstall runs `make install` into a temporary DESTDIR, checks the tree it
// leaves (each file where distributions look for it, with its mode and content), then
// `make uninstall`, which must remove exactly those files: files of other packages in the same
// directories stay. No root needed.
//
// The binary is a stand-in in a temporary BUILD directory, newer than every source so that make
// does not rebuild it (should a source change meanwhile, make builds the real one there).
func TestInstallAndUninstall(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	top, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	dest, build := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(build, "ftctl"), []byte("#!/bin/sh\necho stand-in\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := map[string]string{ // another package's files, in the directories install uses
		"usr/local/bin/other":                                  "x",
		"usr/local/share/man/man1/other.1":                     "x",
		"usr/local/share/bash-completion/completions/other":    "x",
		"usr/local/share/zsh/site-functions/_other":            "x",
		"usr/local/share/fish/vendor_completions.d/other.fish": "x",
	}
	for name, body := range foreign {
		p := filepath.Join(dest, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	makeTarget := func(target string) {
		t.Helper()
		c := exec.Command(mk, "-s", "-C", top, target, "DESTDIR="+dest, "PREFIX=/usr/local", "BUILD="+build)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}

	type file struct {
		src  string // what it is a copy of
		mode fs.FileMode
	}
	want := map[string]file{
		"usr/local/bin/ftctl":                                  {filepath.Join(build, "ftctl"), 0o755},
		"usr/local/share/bash-completion/completions/ftctl":    {filepath.Join(top, "completions/ftctl.bash"), 0o644},
		"usr/local/share/zsh/site-functions/_ftctl":            {filepath.Join(top, "completions/_ftctl"), 0o644},
		"usr/local/share/fish/vendor_completions.d/ftctl.fish": {filepath.Join(top, "completions/ftctl.fish"), 0o644},
	}
	pages, err := filepath.Glob(filepath.Join(top, "man", "*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages in man/ (%v)", err)
	}
	for _, p := range pages {
		want["usr/local/share/man/man1/"+filepath.Base(p)] = file{p, 0o644}
	}

	makeTarget("install")
	got := files(t, dest)
	for name, w := range want {
		info, ok := got[name]
		if !ok {
			t.Errorf("make install did not install %s", name)
			continue
		}
		if info.Mode().Perm() != w.mode {
			t.Errorf("%s: mode %v, want %v", name, info.Mode().Perm(), w.mode)
		}
		a, err1 := os.ReadFile(filepath.Join(dest, name))
		b, err2 := os.ReadFile(w.src)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is not a copy of %s (%v %v)", name, w.src, err1, err2)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && foreign[name] == "" {
			t.Errorf("make install put an unexpected file: %s", name)
		}
	}

	makeTarget("uninstall")
	left := slices.Sorted(maps.Keys(files(t, dest)))
	if want := slices.Sorted(maps.Keys(foreign)); !slices.Equal(left, want) {
		t.Errorf("after make uninstall: %q, want only the other package's %q", left, want)
	}
}

// files lists the regular files under dir by relative path.
func files(t *testing.T, dir string) map[string]fs.FileInfo {
	t.Helper()
	out := map[string]fs.FileInfo{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = info
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
