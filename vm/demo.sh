# The scripted tour `make demo` runs inside the VM: real ftctl commands on a real kernel.
run() {
	echo
	echo "ftctl-vm# $*"
	"$@"
	rc=$?
	[ $rc = 0 ] || echo "(exit $rc)"
}
echo
echo "=== ftctl demo on Linux $(uname -r), booted under qemu: nothing here touches your machine ==="
run ftctl status
run ftctl instance create incident42
run ftctl -B incident42 status
echo; echo "ftctl-vm# ftctl -B incident42 status -o json | head -n 14"; ftctl -B incident42 status -o json | head -n 14
run ftctl -B 'bad/name' status

echo; echo "=== function filters: preview, safe swap, typo protection ==="
run ftctl functions 'vfs_rea*'
run ftctl functions --count '*sched*'
run ftctl -B incident42 filter set 'vfs_rea*' ksys_read
run ftctl -B incident42 filter set vfs_raed
run ftctl -B incident24 filter set 'vfs_rea*' ksys_read
run ftctl -B incident42 filter show
run ftctl -B incident42 --dry-run filter set 'tcp_v4_*' --except 'tcp_v4_do_rcv'
run ftctl -B incident42 filter set 'tcp_v4_*' --except 'tcp_v4_do_rcv'
run ftctl -B incident42 filter remove 'tcp_v4_*'
run ftctl -B incident42 notrace show
run ftctl -B incident42 filter clear

run ftctl trace -p 'p:open do_sys_openat2 path=+0(%si):string' -o json -- cat /proc/version
run ftctl trace -f vfs_read -f ksys_read -- head -n1 /proc/version
run ftctl --dry-run instance remove incident42
run ftctl instance remove incident42
run ftctl instance list
echo
echo "=== end of demo: try it yourself with 'make sandbox' ==="
exit 0
