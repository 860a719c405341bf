// Command mkimage builds ftctl's container image without a container daemon (`make image`):
// the static binary at /ftctl on an empty base (plus the directories ftctl writes: /tmp and
// /run/ftctl, which a read-only root gets as volumes), as an OCI image layout in a tar file,
// which `podman load`, `skopeo copy oci-archive:FILE ...` and containerd's `ctr image import`
// read. The image is reproducible: file times and the creation time are SOURCE_DATE_EPOCH (0
// when unset).
//
//	go run ./internal/mkimage -bin build/ftctl -arch amd64 -version 1.2.3 -o build/ftctl-image-amd64.tar
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	bin := flag.String("bin", "build/ftctl", "the static ftctl binary")
	arch := flag.String("arch", "amd64", "the binary's architecture (GOARCH)")
	version := flag.String("version", "dev", "the image's version (its tag and label)")
	out := flag.String("o", "build/ftctl-image.tar", "the OCI layout tar to write")
	flag.Parse()
	if err := build(*bin, *arch, *version, *out, epoch()); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// epoch is SOURCE_DATE_EPOCH, the reproducible-builds convention, else the Unix epoch.
func epoch() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

// rootfs is the image's one layer: /ftctl and the directories it writes.
func rootfs(binary []byte, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, d := range []struct {
		name string
		mode int64
	}{{"tmp/", 0o1777}, {"run/", 0o755}, {"run/ftctl/", 0o755}, {"etc/", 0o755}, {"etc/ftctl/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: at, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "ftctl", Mode: 0o755, Size: int64(len(binary)), ModTime: at, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// image is ftctl's image from the binary.
func image(binary []byte, arch, version string, at time.Time) (v1.Image, error) {
	fsTar, err := rootfs(binary, at)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(fsTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: arch, OS: "linux", Created: v1.Time{Time: at},
		Config: v1.Config{
			Entrypoint: []string{"/ftctl"}, Cmd: []string{"status"},
			Env: []string{"PATH=/"},
			Labels: map[string]string{
				"org.opencontainers.image.title":       "ftctl",
				"org.opencontainers.image.description": "a control plane for Linux ftrace",
				"org.opencontainers.image.version":     version,
				"org.opencontainers.image.source":      "https://github.com/ftctl/ftctl",
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: at}, CreatedBy: "ftctl make image"}})
}

func build(bin, arch, version, out string, at time.Time) error {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if len(binary) < 4 || string(binary[:4]) != "\x7fELF" {
		return errors.New(bin + ": not an ELF binary")
	}
	img, err := image(binary, arch, version, at)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ftctl-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ref := map[string]string{"org.opencontainers.image.ref.name": version}
	if err := p.AppendImage(img, layout.WithAnnotations(ref), layout.WithPlatform(v1.Platform{OS: "linux", Architecture: arch})); err != nil {
		return err
	}
	return tarDir(dir, out, at)
}

// tarDir writes the directory's files into a tar at out, in name order, with fixed times and
// owners: the same layout gives the same bytes.
func tarDir(dir, out string, at time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(out + ".tmp")
	tw := tar.NewWriter(f)
	for _, p := range names {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: at, Mode: 0o644, Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		} else {
			h.Typeflag, h.Size = tar.TypeReg, st.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !st.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := tw.Write(b); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
