// Command distcheck checks the release artifacts `make dist` leaves in a directory (make
// dist-check runs it, after `sha256sum --check SHA256SUMS`): SHA256SUMS lists every artifact
// and nothing else; each static binary ftctl_VERSION_linux_ARCH is a static ELF file for ARCH;
// each SBOM beside it (.cdx.json) is CycloneDX JSON whose main component is ftctl and which
// names every module, at its version, that the binary's build information says it was linked
// from. Usage: go run ./packaging/distcheck build/dist
package main

import (
	"bufio"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// machines are the ELF machines of the architectures make dist builds for (GOARCH names).
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// binaryName matches a static binary's file name and captures its architecture.
var binaryName = regexp.MustCompile(`^ftctl_[^/]+_linux_([a-z0-9]+)$`)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: distcheck DIR")
		os.Exit(2)
	}
	if err := check(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "distcheck:", err)
		os.Exit(1)
	}
}

// check checks the artifacts in dir and says on w what it checked.
func check(dir string, w io.Writer) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && e.Name() != "SHA256SUMS" {
			files = append(files, e.Name())
		}
	}
	listed, err := sumsNames(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return err
	}
	slices.Sort(listed)
	if !slices.Equal(listed, files) {
		return fmt.Errorf("SHA256SUMS lists %q; the directory holds %q", listed, files)
	}
	fmt.Fprintf(w, "distcheck: SHA256SUMS lists the %d artifacts\n", len(files))
	arches := 0
	for _, name := range files {
		m := binaryName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		arches++
		path := filepath.Join(dir, name)
		if err := checkELF(path, m[1]); err != nil {
			return err
		}
		n, err := checkSBOM(path+".cdx.json", path)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "distcheck: %s: static %s ELF; its SBOM names its %d modules\n", name, m[1], n)
	}
	if arches == 0 {
		return fmt.Errorf("no binary ftctl_VERSION_linux_ARCH in %s", dir)
	}
	return nil
}

// sumsNames reads the file names of a sha256sum file ("HEX  NAME" lines).
func sumsNames(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%s: not a sha256sum line: %q", path, sc.Text())
		}
		names = append(names, name)
	}
	return names, sc.Err()
}

// checkELF checks that path is a 64-bit ELF executable for arch, with no interpreter (static).
func checkELF(path, arch string) error {
	want, ok := machines[arch]
	if !ok {
		return fmt.Errorf("%s: unknown architecture %q", path, arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != want || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
		return fmt.Errorf("%s: %v %v %v, want a 64-bit executable for %v", path, f.Class, f.Type, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("%s: dynamically linked (%v)", path, p.Type)
		}
	}
	return nil
}

// sbom is the part of a CycloneDX document checked here.
type sbom struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component component `json:"component"`
	} `json:"metadata"`
	Components []component `json:"components"`
}

type component struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// checkSBOM checks the CycloneDX JSON at path against the build information of binary, and
// returns how many modules it names.
func checkSBOM(path, binary string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var doc sbom
	if err := json.Unmarshal(data, &doc); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return 0, err
	}
	return checkModules(path, doc, info)
}

// checkModules checks that doc is a CycloneDX SBOM of info's main module naming each module
// info lists at its version.
func checkModules(path string, doc sbom, info *buildinfo.BuildInfo) (int, error) {
	if doc.BOMFormat != "CycloneDX" || doc.SpecVersion == "" {
		return 0, fmt.Errorf("%s: bomFormat %q, specVersion %q: not CycloneDX", path, doc.BOMFormat, doc.SpecVersion)
	}
	if doc.Metadata.Component.Name != info.Main.Path {
		return 0, fmt.Errorf("%s: describes %q, not %s", path, doc.Metadata.Component.Name, info.Main.Path)
	}
	have := map[string]bool{}
	for _, c := range doc.Components {
		have[c.Name+"@"+c.Version] = true
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if !have[d.Path+"@"+d.Version] {
			return 0, fmt.Errorf("%s: no component %s@%s (the binary is linked from it)", path, d.Path, d.Version)
		}
	}
	return len(info.Deps), nil
}
