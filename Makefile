# Thin wrapper over Meson + Ninja; the real build is meson.build.
# build/      release-ish build with hardening (what `make demo` runs)
# build-san/  ASan + UBSan build used for unit and parser tests
# build-fuzz/ clang libFuzzer targets
.PHONY: all deps check-deps build build-san build-fuzz check demo bench fuzz format images clean

all: build

# deps: what build and demo need (Debian packages only, no Go builds).
# check-deps: also the test, fuzz and benchmark tools, and the test-only
# programs built from Go modules (toml-test, the Kubernetes control plane).
deps:
	@scripts/install-deps

check-deps:
	@scripts/install-deps --check

build/build.ninja:
	meson setup build

build: build/build.ninja
	ninja -C build

build-san/build.ninja:
	meson setup build-san -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

build-san: build-san/build.ninja
	ninja -C build-san

build-fuzz/build.ninja:
	CC=clang meson setup build-fuzz -Dfuzz=true -Db_lundef=false -Dbuildtype=debug

build-fuzz: build-fuzz/build.ninja
	ninja -C build-fuzz

check: check-deps
	@scripts/check

demo: deps build
	@scripts/demo

bench: check-deps build
	@bench/run

fuzz: check-deps build-fuzz
	@scripts/run-fuzz 300

# OCI image archives under build/images/ (scripts/build-images, docs/images.md):
# builds only the binaries it packs.
images: build/build.ninja
	@scripts/build-images

format:
	@scripts/format --fix

clean:
	rm -rf build build-san build-fuzz
