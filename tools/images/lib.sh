# lib.sh - shared steps of scripts/build-images (sourced, never run): placing
# files into a staging rootfs, the shared-library closure of an ELF, and
# packing a staged tree into a reproducible OCI image with umoci and tar.
# Every path given to put_* is relative to the rootfs ($R); nothing here ever
# writes outside $R, $WORK or the output directory.

die() {
	echo "build-images: $*" >&2
	exit 1
}

# put_dir PATH MODE
put_dir() {
	mkdir -p "$R/$1"
	chmod "$2" "$R/$1"
}

# put_file SRC PATH MODE: a copy of SRC (symlinks followed).
put_file() {
	[ -f "$1" ] || die "$1: missing (needed for $R/$2)"
	mkdir -p "$(dirname "$R/$2")"
	cp -L "$1" "$R/$2"
	chmod "$3" "$R/$2"
}

# put_elf SRC PATH: an executable without its debug sections and build-id
# note: both depend on the checkout's path (DW_AT_comp_dir, and the hash
# over it), so without them one commit gives one image wherever it is built.
put_elf() {
	[ -x "$1" ] || die "$1: missing or not executable (needed for $R/$2)"
	mkdir -p "$(dirname "$R/$2")"
	strip --strip-debug --remove-section=.note.gnu.build-id -o "$R/$2" "$1" ||
		die "stripping $1 failed"
	chmod 0755 "$R/$2"
}

# put_symlink TARGET PATH
put_symlink() {
	mkdir -p "$(dirname "$R/$2")"
	ln -sfn "$1" "$R/$2"
}

# put_text PATH MODE < content
put_text() {
	mkdir -p "$(dirname "$R/$1")"
	cat >"$R/$1"
	chmod "$2" "$R/$1"
}

# require_static ELF: the file must need no loader (it runs in any image).
require_static() {
	local hdr
	# static-pie has a DYNAMIC segment (its own relocations) but neither
	# an interpreter nor a needed library.
	hdr=$(readelf --program-headers --dynamic --wide "$1") || die "$1: not an ELF file"
	if grep -qE 'INTERP|\(NEEDED\)' <<<"$hdr"; then
		die "$1 is dynamically linked; this image needs it static"
	fi
}

# elf_closure ELF: the absolute paths of every shared object ELF loads, the
# dynamic loader included, one a line, as the loader resolves them here.
# A library the loader cannot find is an error, never a silent omission.
elf_closure() {
	local out
	out=$(ldd "$1") || die "ldd $1 failed (is it a dynamic executable?)"
	if grep -q 'not found' <<<"$out"; then
		die "$1 needs libraries this machine lacks: $(grep 'not found' <<<"$out" | tr -s '\t\n' ' ')"
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $3; next }
	     $1 ~ /^\// { print $1 }' <<<"$out" | sort -u
}

# put_libs ELF: ELF's shared objects at the paths the loader found them at
# here (so the ELF's own interpreter path and the loader's default search
# directories find them in the image, with no ld.so.cache).
put_libs() {
	local lib
	while read -r lib; do
		put_file "$lib" "${lib#/}" 0755
	done < <(elf_closure "$1")
}

# put_bundle ELF DIR: a copy of ELF under DIR/bin whose interpreter and
# libraries all live in DIR/lib, so it runs in an image that has none of
# them (or other versions of them). DT_RPATH, not DT_RUNPATH: RUNPATH
# would cover only the executable's direct needs, and the libraries' own
# needs would then be looked up in the foreign image's /lib.
put_bundle() {
	local elf=$1 dir=$2 lib loader=""
	put_elf "$elf" "$dir/bin/$(basename "$elf")"
	while read -r lib; do
		put_file "$lib" "$dir/lib/$(basename "$lib")" 0755
		case $(basename "$lib") in ld-linux*) loader=$(basename "$lib") ;; esac
		# A library's own RUNPATH would win over our RPATH for its needs.
		if [ -n "$(patchelf --print-rpath "$R/$dir/lib/$(basename "$lib")")" ]; then
			die "$lib carries its own search path; the bundle cannot pin its dependencies"
		fi
	done < <(elf_closure "$elf")
	[ -n "$loader" ] || die "$elf: no dynamic loader in its closure"
	patchelf --set-interpreter "/$dir/lib/$loader" --force-rpath --set-rpath "/$dir/lib" \
		"$R/$dir/bin/$(basename "$elf")" || die "patchelf on the bundled $(basename "$elf") failed"
}

# put_ca [PATH]: Debian's CA bundle where OpenSSL (default file: OPENSSLDIR
# /usr/lib/ssl/cert.pem) and the supervisor look for the system trust; with
# PATH, the file itself lives there and the usual names link to it.
put_ca() {
	local ca=/etc/ssl/certs/ca-certificates.crt
	if [ $# -gt 0 ]; then
		put_file "$ca" "$1" 0644
		put_symlink "/$1" "${ca#/}"
	else
		put_file "$ca" "${ca#/}" 0644
	fi
	put_symlink "$ca" usr/lib/ssl/cert.pem
}

# put_accounts NAME UID HOME SHELL: /etc/passwd and /etc/group with root,
# the image's user (same number for its group) and nobody.
put_accounts() {
	put_text etc/passwd 0644 <<EOF
root:x:0:0:root:/root:/sbin/nologin
$1:x:$2:$2:$1:$3:$4
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
EOF
	put_text etc/group 0644 <<EOF
root:x:0:
$1:x:$2:
nogroup:x:65534:
EOF
}

# layer_tar DIR OWNER OUT [PATH...]: DIR's tree as an uncompressed layer:
# names sorted, every entry owned by OWNER (uid:gid), stamped with the
# commit time, modes as staged (ustar: no atime/ctime/xattr records). With
# PATHs, only those entries (not their parents or contents).
layer_tar() {
	local dir=$1 owner=$2 out=$3
	shift 3
	local -a what=("$@") opts=()
	if [ ${#what[@]} -gt 0 ]; then
		opts=(--no-recursion)
	else
		mapfile -t what < <(find "$dir" -mindepth 1 -maxdepth 1 -printf '%P\n' | sort)
	fi
	tar --create --file "$out" --directory "$dir" --format=ustar --sort=name \
		--numeric-owner --owner="${owner%:*}" --group="${owner#*:}" \
		--mtime="@$SOURCE_DATE_EPOCH" "${opts[@]}" -- "${what[@]}" ||
		die "packing $dir failed"
}

# docker_manifest LAYOUT TAG...: manifest.json beside the OCI layout, as
# `docker save` writes it: the same config and layer blobs, and every TAG.
# podman 4 loads an OCI archive only when index.json has one entry, so with
# two tags it falls back to this file; containerd and skopeo read the OCI
# layout and ignore it.
docker_manifest() {
	local lay=$1 digest
	shift
	digest=$(jq -r '.manifests[0].digest | sub("^sha256:"; "")' "$lay/index.json")
	jq -c --args '[{Config: ("blobs/sha256/" + (.config.digest | sub("^sha256:"; ""))),
		RepoTags: $ARGS.positional,
		Layers: [.layers[].digest | "blobs/sha256/" + sub("^sha256:"; "")]}]' \
		"$@" <"$lay/blobs/sha256/$digest" >"$lay/manifest.json" ||
		die "writing manifest.json of $lay failed"
}

oci_arch() {
	case $(uname -m) in
	x86_64) echo amd64 ;;
	aarch64) echo arm64 ;;
	*) die "no OCI architecture name known for $(uname -m)" ;;
	esac
}

# build_image NAME: stages the rootfs with the image file's stage(), then
# writes $OUT/openshell-NAME.tar. The image file sets IMAGE_USER, and
# optionally IMAGE_ENTRYPOINT, IMAGE_CMD, IMAGE_ENV, IMAGE_VOLUMES,
# IMAGE_PORTS, IMAGE_DESCRIPTION and OWNED_DIRS ("path:mode" entries owned
# by IMAGE_USER, shipped as a second layer so nothing else changes owner).
build_image() {
	local name=$1 dir=$WORK/$1 repo=docker.io/openshell/$1
	local lay=$dir/oci ref e archive=$OUT/openshell-$1.tar
	R=$dir/root
	mkdir -p "$R"
	stage
	layer_tar "$R" 0:0 "$dir/root.tar"
	umoci init --layout "$lay"
	umoci new --image "$lay:build"
	umoci raw add-layer --image "$lay:build" --history.created "$CREATED" \
		--history.created_by "scripts/build-images: $name files (root-owned)" "$dir/root.tar"
	if [ ${#OWNED_DIRS[@]} -gt 0 ]; then
		local -a paths=()
		for e in "${OWNED_DIRS[@]}"; do
			mkdir -p "$dir/owned/${e%:*}"
			chmod "${e##*:}" "$dir/owned/${e%:*}"
			paths+=("${e%:*}")
		done
		layer_tar "$dir/owned" "$IMAGE_USER" "$dir/owned.tar" "${paths[@]}"
		umoci raw add-layer --image "$lay:build" --history.created "$CREATED" \
			--history.created_by "scripts/build-images: $name directories owned by $IMAGE_USER" \
			"$dir/owned.tar"
	fi
	local -a cfg=(--config.user "$IMAGE_USER" --config.workingdir /
		--config.label "org.opencontainers.image.source=$SOURCE_URL"
		--config.label "org.opencontainers.image.version=$VERSION"
		--config.label "org.opencontainers.image.revision=$REVISION"
		--config.label "org.opencontainers.image.title=openshell/$name"
		--config.label "org.opencontainers.image.created=$CREATED"
		--config.label "org.opencontainers.image.description=$IMAGE_DESCRIPTION")
	for e in "${IMAGE_ENTRYPOINT[@]}"; do cfg+=(--config.entrypoint "$e"); done
	for e in "${IMAGE_CMD[@]}"; do cfg+=(--config.cmd "$e"); done
	for e in "${IMAGE_ENV[@]}"; do cfg+=(--config.env "$e"); done
	for e in "${IMAGE_VOLUMES[@]}"; do cfg+=(--config.volume "$e"); done
	for e in "${IMAGE_PORTS[@]}"; do cfg+=(--config.exposedports "$e"); done
	umoci config --image "$lay:build" --no-history --created "$CREATED" --os linux \
		--architecture "$(oci_arch)" "${cfg[@]}"
	for ref in "$repo:$VERSION" "$repo:dev"; do
		umoci tag --image "$lay:build" "$ref"
	done
	umoci rm --image "$lay:build"
	umoci gc --layout "$lay"
	docker_manifest "$lay" "$repo:$VERSION" "$repo:dev"
	# The archive itself is reproducible too (sorted, fixed owner and time);
	# oci-layout and index.json first, as readers that stream it expect.
	chmod -R u=rwX,go=rX "$lay"
	tar --create --file "$archive.tmp" --directory "$lay" --format=ustar --sort=name \
		--numeric-owner --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" \
		-- oci-layout index.json manifest.json blobs || die "packing the layout of $name failed"
	mv -f "$archive.tmp" "$archive"
	printf 'image %s: %s %s:dev %s\n' "$(basename "$archive")" "$repo:$VERSION" "$repo" \
		"$(jq -r '.manifests[0].digest' "$lay/index.json")"
	unset -f stage
}

# reset_image: what an image file may set, emptied before each one is read.
reset_image() {
	IMAGE_USER="" IMAGE_DESCRIPTION=""
	IMAGE_ENTRYPOINT=() IMAGE_CMD=() IMAGE_ENV=() IMAGE_VOLUMES=() IMAGE_PORTS=()
	OWNED_DIRS=()
}
