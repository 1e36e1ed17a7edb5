# tools/image.sh: sourced by tools/test-image.sh and tools/test-node.sh. The
# project's image (Containerfile) built with podman from a Debian 12 base
# made from Debian's archive alone (debootstrap --variant=minbase bookworm,
# then podman import; there is no registry). The base is made once and kept
# (the image localhost/debian:bookworm, the tree in $KEPLER_TEST_ROOT,
# default /var/tmp/kepler-bookworm); the image is built again only where
# podman's layer cache says the sources changed.
# Facts of this host: runc (crun refuses hybrid cgroups), explicit ulimits.
kepler_base_img=localhost/debian:bookworm
kepler_img=localhost/kepler-c:0.1.0
kepler_limits=(--ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
pm() { podman --runtime runc "$@"; }

# kepler_install_podman: podman, runc and debootstrap from Debian's archive; false if they cannot be.
kepler_install_podman() {
	local need=() p
	for p in podman debootstrap runc; do command -v $p >/dev/null || need+=($p); done
	[ ${#need[@]} -eq 0 ] && return 0
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null 2>&1; }
}

# kepler_base_image: make the base image unless podman has it; prints what it did, false on failure.
kepler_base_image() {
	local root=${KEPLER_TEST_ROOT:-/var/tmp/kepler-bookworm}
	if pm image exists $kepler_base_img; then
		echo "ok: base image $kepler_base_img (kept from an earlier run)"
		return 0
	fi
	if [ ! -x "$root/bin/sh" ]; then
		echo "debootstrap --variant=minbase bookworm $root (once)"
		debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1 ||
			{ echo "debootstrap failed: $(tail -3 "$root.log")" >&2; return 1; }
	fi
	tar -C "$root" -c . | pm import --quiet --change 'CMD ["/bin/bash"]' - $kepler_base_img >/dev/null ||
		{ echo "podman import failed" >&2; return 1; }
	echo "ok: base image $kepler_base_img (Debian 12 minbase from Debian's archive)"
}

# kepler_build_image LOG: podman build of the Containerfile; prints its time and size, false on failure.
kepler_build_image() {
	local log=$1 t0
	t0=$(date +%s)
	if pm build --network host "${kepler_limits[@]}" --build-arg BASE=$kepler_base_img -t $kepler_img \
		-f Containerfile . >"$log" 2>&1; then
		echo "ok: podman build: $kepler_img in $(($(date +%s) - t0)) s, $(pm image inspect $kepler_img --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"
	else
		echo "FAIL: podman build: $(tail -5 "$log")"
		return 1
	fi
}
