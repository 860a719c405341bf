# ftctl's build and test entry points. The two that matter to a newcomer:
#   make demo    boot a real kernel in qemu and watch ftctl drive it (make sandbox: a shell there)
#   make test    vet, unit tests, then the integration suite on Debian's 6.1 and 6.12 kernels
# Kernels are fetched once with apt-get download into $(FTCTL_VM_CACHE) (outside the repo).
# make && sudo make install installs ftctl, its man pages and shell completions (PREFIX, DESTDIR).

GO      ?= go
KERNEL  ?= 6.12
KERNELS ?= 6.1 6.12
BUILD   := build
export KERNELS

GOFILES := $(shell find . -name '*.go' -not -path './build/*')

# What `ftctl version` says: on a tag vX.Y.Z, X.Y.Z; else the next release (the file VERSION,
# which the man pages carry too) with -dev+COMMIT. The commit and its date come from git;
# -trimpath keeps the build machine's paths out. LDFLAGS and GOBUILD expand when used, so that
# dist's VERSION reaches them.
RELEASE := $(shell cat VERSION)
TAG     := $(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null | sed 's/^v//')
SHORT   := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
VERSION ?= $(or $(TAG),$(RELEASE)-dev+$(or $(SHORT),unknown))
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
DATE    := $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS  = -s -w -X github.com/ftctl/ftctl/cmd.buildVersion=$(VERSION) -X github.com/ftctl/ftctl/cmd.buildCommit=$(COMMIT) -X github.com/ftctl/ftctl/cmd.buildDate=$(DATE)
GOBUILD  = CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

# Where make install puts things: under PREFIX, where distributions' shells and man look.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MAN1DIR     ?= $(PREFIX)/share/man/man1
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
MANPAGES    := $(wildcard man/*.1)

.PHONY: all build unit vet test vmtest vm-deps vm-bins demo sandbox fixtures fuzz bench docs install uninstall dist dist-check clean image

all: build

# A static binary: the same file runs on the host and in the VM.
build:
	$(GOBUILD) -o $(BUILD)/ftctl .

# The container image, built without a container daemon (internal/mkimage, go-containerregistry):
# the static binary on an empty base, as an OCI layout tar for each of IMAGE_ARCHES, which
# `podman load -i`, `skopeo copy oci-archive:FILE ...` and `ctr image import` read. The
# Kubernetes manifests in deploy/kubernetes run it.
IMAGE_ARCHES ?= amd64 arm64
image:
	set -e; for arch in $(IMAGE_ARCHES); do \
		GOARCH=$$arch $(GOBUILD) -o $(BUILD)/ftctl-linux-$$arch . ; \
		$(GO) run ./internal/mkimage -bin $(BUILD)/ftctl-linux-$$arch -arch $$arch -version '$(VERSION)' -o $(BUILD)/ftctl-image-$$arch.tar; \
	done
	ls -l $(BUILD)/ftctl-image-*.tar

# The binary as a file, for install: built only when missing or older than a source, so that
# `sudo make install` after `make` needs no Go toolchain in root's PATH.
$(BUILD)/ftctl: $(GOFILES) go.mod go.sum
	$(GOBUILD) -o $@ .

# Regenerate man/, completions/, the README's exit-code table and the generated sections of
# docs/reference.md from the command tree (a unit test fails until this is run after a command,
# flag or help text changed).
docs:
	$(GO) run ./internal/gendocs

install: $(BUILD)/ftctl
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MAN1DIR)" "$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	install -m 0755 $(BUILD)/ftctl "$(DESTDIR)$(BINDIR)/ftctl"
	install -m 0644 $(MANPAGES) "$(DESTDIR)$(MAN1DIR)/"
	install -m 0644 completions/ftctl.bash "$(DESTDIR)$(BASHCOMPDIR)/ftctl"
	install -m 0644 completions/_ftctl "$(DESTDIR)$(ZSHCOMPDIR)/_ftctl"
	install -m 0644 completions/ftctl.fish "$(DESTDIR)$(FISHCOMPDIR)/ftctl.fish"

# Removes exactly what install put there (the directories stay: they are shared).
uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/ftctl" $(foreach p,$(notdir $(MANPAGES)),"$(DESTDIR)$(MAN1DIR)/$(p)") \
		"$(DESTDIR)$(BASHCOMPDIR)/ftctl" "$(DESTDIR)$(ZSHCOMPDIR)/_ftctl" "$(DESTDIR)$(FISHCOMPDIR)/ftctl.fish"

# Release artifacts in $(DIST), for each of DIST_ARCHES (cross-compiled: CGO_ENABLED=0 needs no
# C toolchain): the static binary, a tarball (binary, man pages, completions), a .deb and an .rpm
# (nfpm, packaging/nfpm.yaml; nfpm maps GOARCH names to dpkg's and rpm's: arm64 is aarch64 in an
# rpm) and a CycloneDX SBOM of the binary (cyclonedx-gomod reads the modules from the binary's
# build information: what is linked, no more); then SHA256SUMS over all of them (sha256sum -c).
# A tag v1.2.3 gives version 1.2.3; an untagged tree RELEASE~gitYYYYMMDD.COMMIT, which sorts
# before RELEASE. The SBOM names the Go module version, v1.2.3 or vRELEASE-dev+COMMIT. No
# -licenses: it would fetch ftctl's own module from the proxy, which lacks an unpublished one.
# How to cut a release: docs/releasing.md.
NFPM        := $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
CYCLONEDX   := $(GO) run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
DIST        := build/dist
DIST_ARCHES ?= amd64 arm64
PKGVERSION  ?= $(or $(TAG),$(RELEASE)~git$(shell git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null).$(SHORT))
MODVERSION  := v$(or $(TAG),$(RELEASE)-dev+$(or $(SHORT),unknown))
dist: VERSION = $(PKGVERSION)
dist:
	rm -rf $(DIST) && mkdir -p $(DIST)/man
	for m in $(MANPAGES); do gzip -9n < $$m > $(DIST)/man/$$(basename $$m).gz; done
	set -e; for arch in $(DIST_ARCHES); do \
		bin=ftctl_$(PKGVERSION)_linux_$$arch; \
		GOARCH=$$arch $(GOBUILD) -o $(DIST)/$$bin .; \
		(cd $(DIST) && tar -czf $$bin.tar.gz --transform 's,^ftctl_[^/]*$$,ftctl,' $$bin man -C $(CURDIR) LICENSE README.md completions); \
		for p in deb rpm; do \
			PKGVERSION=$(PKGVERSION) ARCH=$$arch BINARY=$(DIST)/$$bin DIST=$(DIST) $(NFPM) package -f packaging/nfpm.yaml -p $$p -t $(DIST)/; \
		done; \
		$(CYCLONEDX) bin -json -std -version '$(MODVERSION)' -output $(DIST)/$$bin.cdx.json $(DIST)/$$bin; \
	done
	cd $(DIST) && sha256sum $$(find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort) > SHA256SUMS
	ls -l $(DIST)

# Installs the host's .deb with dpkg, checks that ftctl and its man page are where they belong,
# and removes it again; then checks the artifacts themselves (packaging/distcheck): SHA256SUMS
# lists every one and verifies, each SBOM is CycloneDX JSON naming every module its binary was
# linked from, and each binary is a static ELF for its architecture (CI runs it, as root).
dist-check: dist
	dpkg -i $(DIST)/ftctl_*_$(shell $(GO) env GOARCH).deb
	/usr/bin/ftctl version
	man -w ftctl
	man -w ftctl-trace
	test -f /usr/share/bash-completion/completions/ftctl
	dpkg -r ftctl
	! test -e /usr/bin/ftctl
	cd $(DIST) && sha256sum --check --strict --quiet SHA256SUMS
	$(GO) run ./packaging/distcheck $(DIST)

vet:
	@unformatted=$$(gofmt -l $(GOFILES)); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags vmtest ./vmtest
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags vmtest ./vmtest

# Unit tests only (no VM): fast, and what `make test` runs first.
unit: vet
	$(GO) test -count=1 ./...

# Everything: unit tests, then the real-kernel suite on every kernel of the matrix.
test: unit vmtest

vm-deps:
	@missing=; \
	command -v qemu-system-x86_64 >/dev/null || missing="$$missing qemu-system-x86"; \
	{ command -v busybox >/dev/null && ! ldd "$$(command -v busybox)" >/dev/null 2>&1; } || missing="$$missing busybox-static"; \
	command -v cpio >/dev/null || missing="$$missing cpio"; \
	command -v xz >/dev/null || missing="$$missing xz-utils"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install$$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# Static binaries for the initramfs: ftctl and the vmtest integration test binary.
# The suite's test binary, and the uprobes' target (vmtest/uprobe_test.go): a static C program,
# and the same program as a static PIE.
vm-bins: build
	CGO_ENABLED=0 $(GO) test -c -tags vmtest -o $(BUILD)/vmtest.test ./vmtest
	$(CC) -O1 -static -o $(BUILD)/uprobetarget vm/uprobetarget/target.c
	$(CC) -O1 -static-pie -fPIE -o $(BUILD)/uprobetarget-pie vm/uprobetarget/target.c

vmtest: vm-deps vm-bins
	vm/suite.sh

demo: vm-deps vm-bins
	vm/run.sh --kernel $(KERNEL) --mode demo --script vm/demo.sh --timeout 300 --file $(BUILD)/ftctl:/bin/ftctl

sandbox: vm-deps vm-bins
	vm/run.sh --kernel $(KERNEL) --mode sandbox --file $(BUILD)/ftctl:/bin/ftctl

# Re-capture the kernel text fixtures under tracefs/testdata from the VM kernels.
fixtures: vm-deps
	vm/fixtures.sh $(KERNELS)

# A short run of every fuzz target (FUZZTIME each).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s || exit 1; \
		done; \
	done

# Benchmarks (not part of make test): go test -bench, then the VM comparisons with cat and
# trace-cmd (tens of minutes: trace-cmd takes about three to select 1,000 functions by name, and
# the stream is measured on both kernels in two TCG modes).
bench: vm-deps build
	$(GO) test -run '^$$' -bench . -benchtime 100x ./filters
	$(GO) test -run '^$$' -bench . -benchtime 2x ./stream
	vm/bench-filters.sh $(KERNELS)
	vm/bench-stream.sh $(KERNELS)
	vm/bench-hot.sh $(KERNELS)

clean:
	rm -rf $(BUILD)
