#!/bin/bash
# nfs_export.sh — an lfs mount exported over NFS (lfs(8), EXPORTING).
# The kernel here has neither nfsd nor the NFS client, so the server is
# nfs-ganesha with its VFS backend, which reaches the files it serves
# only through name_to_handle_at and open_by_handle_at, as nfsd does,
# on loopback; the client is libnfs's nfs-cp and nfs-ls.  A tree is
# copied in through NFSv3 (its directories made on lfs itself: the
# client tools make none), read back through NFSv4 and NFSv3 and every
# file compared.  A client (nfs_hold) keeps an open file's NFS handle
# while the server restarts and the kernel forgets lfs's inodes, and
# reads the file by that handle after it: an NFS client's handles
# outlive a server's reboot, and the server then opens the file by the
# kernel's handle that its own wraps.  Every file is read by path again
# after that, and after a remount of lfs under the stopped server.  Writes go by NFSv3 since libnfs
# 4.0's NFSv4 client cannot encode a WRITE of 4096 bytes or more ("ZDR
# error: Failed to encode COMPOUND4args", to a tmpfs export as well);
# NFSv3 needs rpcbind, which ganesha registers with (without it, it
# never finishes starting): the test starts one unless one runs.
. "$(dirname "$0")/lib.sh"

command -v ganesha.nfsd >/dev/null || skip "ganesha.nfsd (package nfs-ganesha) is missing"
vfs=no
for so in /usr/lib/*/ganesha/libfsalvfs.so /usr/lib/ganesha/libfsalvfs.so; do [ -e "$so" ] && vfs=yes; done
[ $vfs = yes ] || skip "ganesha's VFS backend (package nfs-ganesha-vfs) is missing"
command -v nfs-cp >/dev/null || skip "nfs-cp (package libnfs-utils) is missing"
[ -n "$PY" ] || skip "python3 is missing"
command -v rpcbind >/dev/null || skip "rpcbind (package rpcbind) is missing"

GPID=
RPCBIND_PID=
# stop PID: SIGTERM, and wait until it has exited
stop() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
stop_ganesha() { stop "$GPID"; GPID=; }
trap 'rc=$?; stop_ganesha; stop "$RPCBIND_PID"; set +e; (exit $rc); cleanup' EXIT INT TERM

# rpcbind is the machine's: one run of this suite at a time (the plain
# and the sanitizer pass of scripts/test.sh run side by side), so that
# none stops an rpcbind another's ganesha registered with
exec 9>/tmp/lfs-test-nfs_export.lock
flock -w 600 9 || fail "another nfs_export.sh held its lock for ten minutes"
if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	rpcbind -f 2>"$WORK/rpcbind.log" &
	RPCBIND_PID=$!
	for _ in $(seq 1 100); do
		rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
		kill -0 "$RPCBIND_PID" 2>/dev/null || { cat "$WORK/rpcbind.log"; fail "rpcbind exited"; }
		sleep 0.1
	done
	rpcinfo -p 127.0.0.1 >/dev/null 2>&1 || fail "rpcbind does not answer"
fi

# ports no one listens on, for NFS and its mount protocol on 127.0.0.1
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
MNT_PORT=$(free_port)
mkdir -p "$WORK/recovery"
cat >"$WORK/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $PORT;
	Bind_Addr = 127.0.0.1;
	MNT_Port = $MNT_PORT;
	Protocols = 3, 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 {
	Graceless = true;
	RecoveryBackend = fs;
	RecoveryRoot = "$WORK/recovery";
	Allow_Numeric_Owners = true;
	Only_Numeric_Owners = true;
}
EXPORT {
	Export_Id = 1;
	Path = "$MNT";
	Pseudo = /lfs;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3, 4;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = VFS; }
}
EOF

# start_ganesha: in the foreground, in the background, until it listens
start_ganesha() {
	: >"$WORK/ganesha.log"
	ganesha.nfsd -F -f "$WORK/ganesha.conf" -L "$WORK/ganesha.log" -p "$WORK/ganesha.pid" 2>>"$WORK/ganesha.err" &
	GPID=$!
	for _ in $(seq 1 200); do
		grep -q "NFS SERVER INITIALIZED" "$WORK/ganesha.log" && ss -ltn | grep -q "127.0.0.1\]\?:$PORT " && return 0
		kill -0 "$GPID" 2>/dev/null || { cat "$WORK/ganesha.log"; fail "ganesha.nfsd exited"; }
		sleep 0.1
	done
	cat "$WORK/ganesha.log"
	fail "ganesha.nfsd did not listen on 127.0.0.1:$PORT"
}
# url V PATH: PATH in the export by NFS version V (4: the pseudo path)
url() {
	if [ "$1" = 4 ]; then echo "nfs://127.0.0.1/lfs/$2?version=4&nfsport=$PORT"
	else echo "nfs://127.0.0.1$MNT/$2?version=3&nfsport=$PORT&mountport=$MNT_PORT"; fi
}

# the tree: sizes around a block and a segment, a 5 MiB file, a deep path
SRC="$WORK/src"
mkdir -p "$SRC/a/b/c" "$SRC/d" "$SRC/e/f"
: >"$SRC/empty"
printf x >"$SRC/one"
head -c 4095 /dev/urandom >"$SRC/a/short"
head -c 4096 /dev/urandom >"$SRC/a/block"
head -c 1048583 /dev/urandom >"$SRC/a/b/mib"
head -c 5242880 /dev/urandom >"$SRC/d/five"
for i in $(seq 1 40); do echo "file $i" >"$SRC/e/f/n$i"; done
echo deep >"$SRC/a/b/c/deep"
FILES=$(cd "$SRC" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)

# read_all OUT WHEN: every file copied out through NFSv4 and NFSv3 into
# OUT, and compared
read_all() {
	rm -rf "$1"
	local f v
	for v in 4 3; do
		for f in $FILES; do
			mkdir -p "$1/v$v/$(dirname "$f")"
			nfs-cp "$(url $v "tree/$f")" "$1/v$v/$f" >/dev/null || fail "nfs-cp of $f out of lfs by NFSv$v ($2)"
			cmp "$SRC/$f" "$1/v$v/$f" || fail "$f read through NFSv$v differs ($2)"
		done
	done
}

mkfs_img 256M
lfs_mount
start_ganesha
(cd "$SRC" && find . -type d) | (cd "$MNT" && mkdir -p tree && cd tree && xargs mkdir -p)
for f in $FILES; do
	nfs-cp "$SRC/$f" "$(url 3 "tree/$f")" >/dev/null || fail "nfs-cp of $f into lfs"
done
for f in $FILES; do
	cmp "$SRC/$f" "$MNT/tree/$f" || fail "$f written through NFS differs on lfs"
done
nfs-ls -R "$(url 4 tree)" >"$WORK/listing" || fail "nfs-ls -R"
for f in $FILES; do
	grep -q " tree/$f\$\| $f\$" "$WORK/listing" || { cat "$WORK/listing"; fail "nfs-ls -R does not list $f"; }
done
read_all "$WORK/out1" "as written"

# A client keeps the NFS handle of an open file while the server stops
# (its caches and open files gone) and the kernel forgets lfs's unused
# inodes; then while lfs is remounted under a stopped server.  After
# each, the server has only the client's handle to go by: it opens the
# file by the kernel's handle inside it (open_by_handle_at).
HOLD="$top_builddir/tests/integration/nfs_hold"
coproc HOLDER { "$HOLD" "$(url 3 tree/d/five)" "$WORK/held" 2>&1; }
HOLDER_ID=$HOLDER_PID # bash unsets HOLDER_PID once it has exited
read -r said <&"${HOLDER[0]}" || fail "nfs_hold did not open the file"
[ "$said" = open ] || fail "nfs_hold: $said"
# read_held N WHEN: the holder reads the file again by its handle
read_held() {
	echo go >&"${HOLDER[1]}"
	read -r said <&"${HOLDER[0]}" || said="nothing"
	[ "$said" = "read $1" ] || fail "by a handle kept by the client, $2: $said"
	cmp "$SRC/d/five" "$WORK/held.$1" || fail "by a handle kept by the client, $2: the file differs"
}
stop_ganesha
sync
echo 2 >/proc/sys/vm/drop_caches
start_ganesha
read_held 2 "after a restart of the server and the kernel dropping its caches"
read_all "$WORK/out2" "after a restart of the server and the kernel dropping its caches"

# Under a remount of lfs the client's handle holds only if the new
# mount gets the same device number, by which ganesha's VFS backend
# names the filesystem (lfs(8), EXPORTING): other mounts made meanwhile
# (make check runs two suites at a time) give it another.  Paths are
# served afresh.
stop_ganesha
lfs_umount
lfs_mount
start_ganesha
read_all "$WORK/out3" "after a remount of lfs"
exec {HOLDER[1]}>&-
wait "$HOLDER_ID" || fail "nfs_hold exited with status $?"
stop_ganesha
lfs_umount
echo "nfs_export: $(echo "$FILES" | wc -l) files ($(du -sk "$SRC" | cut -f1) KiB) copied into lfs through NFS (ganesha VFS on loopback; in by NFSv3) and read back the same by NFSv4 and NFSv3 three times (the last after a remount of lfs); a 5 MiB file read by a handle the client kept across a restart of the server with the kernel's caches dropped"
