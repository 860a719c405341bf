package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The image is an OCI layout that go-containerregistry reads back: /ftctl executable, its
// entrypoint, the platform; and two builds give the same bytes.
func TestImage(t *testing.T) {
	exe, err := os.Executable() // an ELF binary to put in the image
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "img.tar")
	at := time.Unix(1700000000, 0).UTC()
	if err := build(exe, "amd64", "9.9.9", out, at); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "img2.tar")
	if err := build(exe, "amd64", "9.9.9", again, at); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Errorf("two builds differ")
	}
	lay := filepath.Join(dir, "layout")
	os.Mkdir(lay, 0o755)
	if o, err := exec.Command("tar", "-xf", out, "-C", lay).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, o)
	}
	idx, err := layout.ImageIndexFromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "9.9.9" ||
		m.Manifests[0].Platform == nil || m.Manifests[0].Platform.Architecture != "amd64" {
		t.Fatalf("index %+v %v", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.Config.Entrypoint[0] != "/ftctl" || cfg.OS != "linux" || cfg.Config.Labels["org.opencontainers.image.version"] != "9.9.9" {
		t.Fatalf("config %+v %v", cfg, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "ftctl" {
			found = h.Mode == 0o755 && h.Size == int64(len(mustRead(t, exe)))
		}
	}
	if !found {
		t.Errorf("no executable /ftctl of the binary's size in the layer")
	}
	if err := build(filepath.Join(dir, "img.tar"), "amd64", "x", filepath.Join(dir, "bad.tar"), at); err == nil {
		t.Errorf("a non-ELF file was put in an image")
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
