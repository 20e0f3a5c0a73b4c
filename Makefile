# Thin wrapper over Meson + Ninja; the real build is meson.build.
# build/      release-ish build with hardening (what `make demo` runs)
# build-san/  ASan + UBSan build used for unit and parser tests
# build-fuzz/ clang libFuzzer targets
.PHONY: all deps build build-san build-fuzz check demo bench fuzz format images clean

all: build

deps:
	@scripts/install-deps

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

check: deps
	@scripts/check

demo: deps build
	@scripts/demo

bench: deps build
	@bench/run

fuzz: deps build-fuzz
	@scripts/run-fuzz 300

# OCI image archives under build/images/ (scripts/build-images, docs/images.md):
# builds only the binaries it packs.
images: build/build.ninja
	@scripts/build-images

format:
	@scripts/format --fix

clean:
	rm -rf build build-san build-fuzz
