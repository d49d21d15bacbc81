#!/bin/bash
# The BLE path against a real BlueZ stack (issue 10): builds trackme-agent with a static Swift
# runtime, boots the BLE test VM from ../shared/tools/ble-vm (Debian's kernel, two btvirt LE
# controllers, BlueZ's btgatt-server -r as the strap on hci0) and runs the agent on hci1:
#   1-scan        `scan --adapter hci1` finds the strap with address, RSSI and 0x180D
#   2-watch       `hrm watch --count 10` decodes 10 Heart Rate Measurements
#   3-reconnect   btgatt-server killed and restarted mid-stream: the agent reconnects by itself
#   4-not-found   a wrong address: "not found", retries with backoff, little CPU
#   5-bluetoothd  the same beside bluetoothd and the system D-Bus
#   6-, 7-        beside bluetoothd running discovery or connected to the strap itself
#   8-button      no Bluetooth: a uinput key held 2.5 s raises an SOS, the LED (input-leds) blinks
# Exits 0 only when the VM booted and every check passed; any other outcome fails loudly.
#
#   hardware/ble-vm/run-checks.sh            # or: make ble-vm
# Environment: BLE_VM_TOOLS (default ../shared/tools/ble-vm), BLE_VM_DIR (/var/tmp/ble-vm),
# TRACKME_AGENT (use this binary instead of building), BLE_VM_CHECKS ("1-scan 3-reconnect": run
# only these), BLE_VM_TIMEOUT (VM time limit, default 600 s here).
# Results (console log, btmon traces, agent output per check): $BLE_VM_DIR/results/.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/hardware/ble-vm
die() { echo "ble-vm: FAIL: $*" >&2; exit 1; }
. "$HERE/find-shared.sh" || exit 2
BLE_VM_DIR=${BLE_VM_DIR:-/var/tmp/ble-vm}
export BLE_VM_DIR
t_start=$(date +%s)
stamp() { echo "ble-vm: [$(( $(date +%s) - t_start ))s] $*"; }

[ "$(id -u)" -eq 0 ] || die "run as root (the image build needs debootstrap; the VM needs qemu)"
command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"

stamp "VM image (cached in $BLE_VM_DIR)"
"$BLE_VM_TOOLS/build-image.sh" || die "building the VM image failed (see $BLE_VM_DIR/debootstrap.log)"
t_image=$(date +%s)

if [ -n "${TRACKME_AGENT:-}" ]; then
	AGENT=$TRACKME_AGENT
else
	stamp "swift build -c release --static-swift-stdlib --product trackme-agent"
	(cd "$ROOT" && swift build -c release --static-swift-stdlib --product trackme-agent) ||
		die "building trackme-agent failed"
	AGENT=$(cd "$ROOT" && swift build -c release --static-swift-stdlib --show-bin-path)/trackme-agent
fi
[ -x "$AGENT" ] || die "$AGENT is not an executable"
t_build=$(date +%s)

PAYLOAD=$(mktemp -d /var/tmp/trackme-ble-vm.XXXXXX)
trap 'rm -rf "$PAYLOAD"' EXIT
mkdir -p "$PAYLOAD/bin" "$PAYLOAD/checks" "$PAYLOAD/lib" "$PAYLOAD/out"
# The VM image has glibc and libbluetooth3 but not the agent's other shared libraries (libcurl
# for the sync client, libsqlite3, libgps, ...): ship what the binary links, except glibc itself
# (the guest's is the same bookworm version), and start it through a wrapper that points the
# loader at them. `exec` keeps the PID, which the checks measure.
mkdir -p "$PAYLOAD/solib"
ldd "$AGENT" | awk '/=> \// {print $3}' | while read -r lib; do
	case "$(basename "$lib")" in
	libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*) ;;
	*) cp -L "$lib" "$PAYLOAD/solib/" ;;
	esac
done
cp "$AGENT" "$PAYLOAD/bin/trackme-agent.bin"
cat > "$PAYLOAD/bin/trackme-agent" <<'WRAP'
#!/bin/sh
LD_LIBRARY_PATH=/payload/solib exec /payload/bin/trackme-agent.bin "$@"
WRAP
chmod 755 "$PAYLOAD/bin/trackme-agent"
cp "$HERE"/payload/lib/* "$PAYLOAD/lib/"
# Check 8-button: a uinput button with LEDs (the image has no compiler: built static here) and a
# heart-rate trace for the agent's simulated strap.
${CC:-cc} -static -O2 -Wall -o "$PAYLOAD/bin/uinput-button" "$HERE/uinput-button.c" ||
	die "building uinput-button (static; needs gcc and libc6-dev) failed"
cp "$ROOT/simulations/traces/hr/mitdb100_normal_sinus.csv" "$PAYLOAD/lib/"
CHECKS=${BLE_VM_CHECKS:-$(cd "$HERE/payload/checks" && ls)}
for c in $CHECKS; do
	[ -f "$HERE/payload/checks/$c" ] || die "no check $c in $HERE/payload/checks"
	install -m 755 "$HERE/payload/checks/$c" "$PAYLOAD/checks/$c"
done

stamp "booting the VM: self test, then checks: $(echo $CHECKS)"
LOG=$PAYLOAD/console.log
# Under emulation on a loaded host, btvirt can miss the kernel's HCI init timeout for a controller
# ("Opcode 0x0c03 failed: -110", hci0 at 00:00:00:00:00:00): the VM is unusable, not our code
# broken. That one case is retried (BLE_VM_RETRIES, default 1), and said so.
attempt=0
while :; do
	BLE_VM_LOG=$LOG BLE_VM_TIMEOUT=${BLE_VM_TIMEOUT:-600} "$BLE_VM_TOOLS/run-in-vm.sh" "$PAYLOAD"
	vm_rc=$?
	if [ "$vm_rc" -ne 0 ] && grep -q 'Opcode 0x0c03 failed\|^hci[01]=00:00:00:00:00:00\|hci[01]=00:00:00:00:00:00$' "$LOG" &&
		[ "$attempt" -lt "${BLE_VM_RETRIES:-1}" ]; then
		attempt=$((attempt + 1))
		echo "ble-vm: a virtual controller failed its HCI init (host too loaded for the emulated VM?): retrying the VM ($attempt)" >&2
		rm -rf "$PAYLOAD/out" && mkdir -p "$PAYLOAD/out"
		continue
	fi
	break
done
t_vm=$(date +%s)

RESULTS=$BLE_VM_DIR/results
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
cp -r "$PAYLOAD/out/." "$RESULTS/" 2> /dev/null
cp "$LOG" "$RESULTS/console.log" 2> /dev/null

# Never pass silently: the VM must have booted, and every check must have its own PASS line.
grep -q '^BLE-VM-BOOTED' "$LOG" || die "the VM did not boot (run-in-vm.sh exit $vm_rc; log $RESULTS/console.log)"
case $vm_rc in
	124) die "the VM ran past its time limit (log $RESULTS/console.log)" ;;
	125) die "the VM stopped without reporting a result (log $RESULTS/console.log)" ;;
esac
failed=0
for c in $CHECKS; do
	if grep -q "^PASS: $c\$" "$LOG"; then
		echo "ble-vm: PASS $c"
	else
		why=$(grep -m1 "^FAIL\[$c\]" "$LOG" | sed 's/^FAIL\[[^]]*\]: //')
		grep -q "^FAIL: $c\$" "$LOG" || why="did not run (no result in the VM log)"
		echo "ble-vm: FAIL $c: ${why:-timed out (60 s) or failed without a message; see $RESULTS/$c/}"
		failed=$((failed + 1))
	fi
done
# The VM's own self test (BlueZ's btgatt-client against btgatt-server) runs first. Its failures
# are reported; they fail the run only if one of our checks failed too (a check repairs the
# controller set-up the self test races on a loaded host, see lib/common.sh).
selftest_failures=$(grep '^FAIL: ' "$LOG" | grep -v -x -F "$(printf 'FAIL: %s\n' $CHECKS)")
[ -n "$selftest_failures" ] && echo "$selftest_failures" | sed 's/^/ble-vm: note: VM self test: /'
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$LOG" | tail -1)
echo "ble-vm: VM: $summary; image $(( t_image - t_start )) s, build $(( t_build - t_image )) s, VM $(( t_vm - t_build )) s; results in $RESULTS"
[ "$failed" -eq 0 ] || die "$failed of $(echo $CHECKS | wc -w) checks failed"
stamp "all $(echo $CHECKS | wc -w) checks passed"
