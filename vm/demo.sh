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
run ftctl --dry-run instance remove incident42
run ftctl instance remove incident42
run ftctl instance list
echo
echo "=== end of demo: try it yourself with 'make sandbox' ==="
exit 0
