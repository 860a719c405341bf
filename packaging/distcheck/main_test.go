package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCheckModules(t *testing.T) {
	info := &buildinfo.BuildInfo{Main: debug.Module{Path: "github.com/ftctl/ftctl"}, Deps: []*debug.Module{
		{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
		{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/new", Version: "v2.0.0"}},
	}}
	good := func() sbom {
		var d sbom
		d.BOMFormat, d.SpecVersion = "CycloneDX", "1.6"
		d.Metadata.Component.Name = "github.com/ftctl/ftctl"
		d.Components = []component{{Name: "github.com/spf13/cobra", Version: "v1.10.2"}, {Name: "example.com/new", Version: "v2.0.0"}}
		return d
	}
	for _, c := range []struct {
		name   string
		change func(*sbom)
		err    string
	}{
		{"good", func(*sbom) {}, ""},
		{"not CycloneDX", func(d *sbom) { d.BOMFormat = "SPDX" }, "not CycloneDX"},
		{"another program", func(d *sbom) { d.Metadata.Component.Name = "example.com/other" }, "describes"},
		{"a module missing", func(d *sbom) { d.Components = d.Components[1:] }, "no component github.com/spf13/cobra@v1.10.2"},
		{"another version", func(d *sbom) { d.Components[0].Version = "v1.10.1" }, "no component github.com/spf13/cobra@v1.10.2"},
		{"the replaced module", func(d *sbom) { d.Components[1] = component{Name: "example.com/old", Version: "v1.0.0"} }, "example.com/new@v2.0.0"},
	} {
		d := good()
		c.change(&d)
		n, err := checkModules("x.cdx.json", d, info)
		switch {
		case c.err == "" && (err != nil || n != 2):
			t.Errorf("%s: %d modules, %v", c.name, n, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
		}
	}
}

// A directory as make dist leaves it, with this test binary as the host's ftctl: check passes
// only when SHA256SUMS lists every artifact, and the binary's architecture is its name's.
func TestCheck(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkELF(self, runtime.GOARCH); err != nil {
		t.Skipf("the test binary is not a static executable here: %v", err)
	}
	info, err := buildinfo.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	write := func(dir, name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sbomFor := func(main string) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, `{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":{"name":%q}},"components":[`, main)
		for i, d := range info.Deps {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name":%q,"version":%q}`, d.Path, d.Version)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	for _, c := range []struct {
		name, arch string
		unlisted   bool
		err        string
	}{
		{"good", runtime.GOARCH, false, ""},
		{"an artifact not in SHA256SUMS", runtime.GOARCH, true, "SHA256SUMS lists"},
		{"the wrong architecture", other, false, "want a 64-bit executable"},
	} {
		if c.arch == "" {
			continue // a host make dist does not build for
		}
		dir := t.TempDir()
		name := "ftctl_1.2.3_linux_" + c.arch
		write(dir, name, bin)
		write(dir, name+".cdx.json", sbomFor(info.Main.Path))
		write(dir, "ftctl_1.2.3_"+c.arch+".deb", []byte("a package"))
		var sums strings.Builder
		for _, f := range []string{name, name + ".cdx.json", "ftctl_1.2.3_" + c.arch + ".deb"} {
			if c.unlisted && strings.HasSuffix(f, ".deb") {
				continue
			}
			data, _ := os.ReadFile(filepath.Join(dir, f))
			fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(data), f)
		}
		write(dir, "SHA256SUMS", []byte(sums.String()))
		err := check(dir, io.Discard)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
		}
	}
}

func TestSumsNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "SHA256SUMS")
	good := strings.Repeat("a", 64) + "  ftctl_1_amd64.deb\n"
	os.WriteFile(path, []byte(good), 0o644)
	if names, err := sumsNames(path); err != nil || len(names) != 1 || names[0] != "ftctl_1_amd64.deb" {
		t.Errorf("%q, %v", names, err)
	}
	for _, bad := range []string{"abc  x\n", strings.Repeat("a", 64) + " x\n", strings.Repeat("a", 64) + "  ../x\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := sumsNames(path); err == nil {
			t.Errorf("%q taken for a sha256sum line", bad)
		}
	}
}
