# Shared by the checks that run inside the BLE test VM (sourced, POSIX sh).
#
# The VM's self test (../shared/tools/ble-vm/selftest.sh) has made hci0 (the peripheral) and hci1
# (the central) with btvirt, started `btgatt-server -i hci0 -r` and exported ADDR0/ADDR1 before it
# runs each check. A check passes by exiting 0 within 60 s; its output is printed after it.

export PATH=/payload/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CHECK=$(basename "$0")
OUT=/payload/out/$CHECK
mkdir -p "$OUT"
# Run the agent from the VM's tmpfs: executing it straight from the 9p share pages it in over 9p.
# The binary comes with the shared libraries the image lacks (run-checks.sh puts them in solib/);
# a wrapper points the loader at them and `exec`s, so the agent keeps the wrapper's PID.
AGENT=/tmp/trackme-agent
if [ ! -x "$AGENT" ]; then
	cp /payload/bin/trackme-agent.bin /tmp/trackme-agent.bin 2> /dev/null &&
		cp -r /payload/solib /tmp/solib 2> /dev/null &&
		printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/solib exec /tmp/trackme-agent.bin "$@"\n' > "$AGENT" &&
		chmod 755 "$AGENT"
fi
# A strap advertises the Heart Rate service; the kernel's plain "advertising on" (instance 0)
# carries only flags and TX power, so the peripheral gets an advertising instance that says 0x180D
# and a name, as a real strap's does.
ADV_DATA=0a09486561727452617465   # Complete Local Name "HeartRate"

say() { echo "[$CHECK] $*"; }
fail() {
	echo "FAIL[$CHECK]: $*"
	for f in "$OUT"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $f (last 40 lines)"
		tail -40 "$f"
	done
	stop_btmon
	exit 1
}


# The peripheral advertises connectable with 0x180D in its advertising data (instance 1).
# Replaces the self test's "advertising on", which would take precedence over instances.
advertise_hrs() {
	btmgmt -i hci0 connectable on > /dev/null
	btmgmt -i hci0 advertising off > /dev/null
	btmgmt -i hci0 rm-adv 1 > /dev/null 2>&1
	btmgmt -i hci0 add-adv -c -g -u 180d -d "$ADV_DATA" 1 > /dev/null ||
		fail "btmgmt add-adv on hci0 failed"
}

# btgatt-server serves one connection and exits when it ends. Started as the self test does
# (stdin held open by a sleep, or it quits at EOF).
SERVER_N=0
start_server() {
	SERVER_N=$((SERVER_N + 1))
	log=$OUT/server-$SERVER_N.log
	( sleep 600 | stdbuf -oL btgatt-server -i hci0 -r -v > "$log" 2>&1 ) &
	for i in $(seq 1 100); do
		grep -q 'Started listening' "$log" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "btgatt-server did not start (see $log)"
}
kill_server() {
	pid=$(pgrep -x btgatt-server)
	[ -n "$pid" ] && kill $pid 2> /dev/null
	for i in $(seq 1 50); do
		pgrep -x btgatt-server > /dev/null || return 0
		sleep 0.1
	done
	fail "btgatt-server did not exit"
}
# Waits until no LE link is left on hci0 (the kernel keeps an idle link up for a moment).
wait_no_link() {
	for i in $(seq 1 100); do
		[ -z "$(hcitool -i hci0 con | sed 1d)" ] && return 0
		sleep 0.1
	done
	return 1
}

# btmon on the central's controller, as a btsnoop file (decoded to text by stop_btmon).
BTMON_PID=
start_btmon() {
	stdbuf -oL btmon -i 1 -w "$OUT/hci1.btsnoop" > /dev/null 2>&1 &
	BTMON_PID=$!
	sleep 0.3
}
stop_btmon() {
	[ -n "$BTMON_PID" ] || return 0
	kill "$BTMON_PID" 2> /dev/null
	wait "$BTMON_PID" 2> /dev/null
	BTMON_PID=
	btmon -r "$OUT/hci1.btsnoop" > "$OUT/hci1.btmon.txt" 2>&1
}

# Counts lines of a file matching a pattern (0 when the file is missing).
count() { grep -c "$2" "$1" 2> /dev/null || true; }

# Waits up to $3 seconds until file $1 has at least $2 lines matching $4.
wait_lines() {
	deadline=$(( $(date +%s) + $3 ))
	while [ "$(date +%s)" -le "$deadline" ]; do
		[ "$(count "$1" "$4")" -ge "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# The system D-Bus and bluetoothd, as Debian's dbus.service and bluetooth.service start them.
BTD_PID=
start_bluetoothd() {
	mkdir -p /run/dbus
	[ -S /run/dbus/system_bus_socket ] || dbus-daemon --system --fork > /dev/null ||
		fail "dbus-daemon --system did not start"
	/usr/libexec/bluetooth/bluetoothd -n -d ${BLUETOOTHD_FLAGS:-} > "$OUT/bluetoothd.log" 2>&1 &
	BTD_PID=$!
	# bluetoothd names the controllers ("BlueZ 5.66") once it has set them up.
	for i in $(seq 1 100); do
		btmgmt -i hci1 info | grep -q 'name BlueZ' && btmgmt -i hci0 info | grep -q 'name BlueZ' && break
		sleep 0.1
	done
	kill -0 "$BTD_PID" 2> /dev/null || fail "bluetoothd did not start"
	btmgmt -i hci1 info | grep -q 'name BlueZ' || fail "bluetoothd did not take hci1 within 10 s"
	sleep 1
}
stop_bluetoothd() {
	[ -n "$BTD_PID" ] && kill "$BTD_PID" 2> /dev/null && wait "$BTD_PID" 2> /dev/null
	BTD_PID=
	[ -f /run/dbus/pid ] && kill "$(cat /run/dbus/pid)" 2> /dev/null
	rm -f /run/dbus/pid /run/dbus/system_bus_socket
	# bluetoothd powers the controllers off when it exits; put back what the self test set up.
	echo "after bluetoothd exited: hci0 $(settings hci0); hci1 $(settings hci1)" >> "$OUT/settings.txt"
	for c in hci0 hci1; do btmgmt -i $c power on > /dev/null; done
	btmgmt -i hci0 connectable on > /dev/null
}
settings() { btmgmt -i "$1" info | sed -n 's/.*current settings: //p'; }

# The self test sets the controllers up without waiting for hci0 to finish its HCI init; on a
# loaded host under emulation hci0 can still be unregistered then (all-zero address, mgmt
# "Invalid Index") and stays powered off. Wait for both, and power them up as the self test meant to.
address_of() { hciconfig "$1" 2> /dev/null | sed -n 's/.*BD Address: \([0-9A-F:]*\).*/\1/p'; }
ensure_controllers() {
	# A controller that failed its init does not come back: once one check saw that, the
	# following ones fail at once instead of each waiting again.
	[ -f /tmp/ble-vm-controllers-broken ] && fail "$(cat /tmp/ble-vm-controllers-broken)"
	deadline=$(( $(date +%s) + 20 ))
	retried_up=
	while :; do
		a0=$(address_of hci0); a1=$(address_of hci1)
		indexes=$(btmgmt info 2> /dev/null | grep -c '^hci[01]:')
		if [ "${a0:-00:00:00:00:00:00}" != 00:00:00:00:00:00 ] && [ "${a1:-00:00:00:00:00:00}" != 00:00:00:00:00:00 ] &&
			[ "$indexes" -eq 2 ]; then
			break
		fi
		# One more HCI init for a controller whose first one timed out (hciconfig up re-runs it).
		if [ -z "$retried_up" ] && [ "$(date +%s)" -gt "$((deadline - 15))" ]; then
			retried_up=1
			for c in hci0 hci1; do
				[ "$(address_of $c)" = 00:00:00:00:00:00 ] && { say "$c has no address yet: hciconfig $c up"; hciconfig $c up 2>&1; }
			done
		fi
		if [ "$(date +%s)" -gt "$deadline" ]; then
			dmesg | grep -i 'bluetooth' | tail -5
			echo "the btvirt controllers are not both up (hci0 ${a0:-none}, hci1 ${a1:-none}, $indexes in mgmt): a controller failed its HCI init (emulated VM on a loaded host?)" > /tmp/ble-vm-controllers-broken
			fail "the btvirt controllers are not both up (hci0 ${a0:-none}, hci1 ${a1:-none}, $indexes in mgmt): a controller failed its HCI init (emulated VM on a loaded host?)"
		fi
		sleep 0.5
	done
	ADDR0=$a0; ADDR1=$a1
	export ADDR0 ADDR1
	for c in hci0 hci1; do
		if ! settings $c | grep -q powered; then
			say "$c was not powered: powering it on"
			btmgmt -i $c le on > /dev/null 2>&1
			btmgmt -i $c power on > /dev/null 2>&1
		fi
	done
	btmgmt -i hci0 connectable on > /dev/null
	pgrep -x btgatt-server > /dev/null || start_server
}

[ -x "$AGENT" ] || fail "/payload/bin/trackme-agent missing from the payload"
# A check that needs no Bluetooth (8-button) sets NO_BLUETOOTH=1 before sourcing this.
[ -n "${NO_BLUETOOTH:-}" ] || ensure_controllers
