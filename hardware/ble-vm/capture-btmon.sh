#!/bin/bash
# Records a good run of BlueZ's own tools (hcitool lescan, btgatt-client against btgatt-server -r)
# in the BLE test VM with btmon, and refreshes hardware/btmon/bluez-tools.* from it.
# The parser fixtures in Tests/BlueZHeartRateTests/Fixtures were cut from that recording with
# hardware/ble-vm/btsnoop-dump.py.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=find-shared.sh
. "$ROOT/hardware/ble-vm/find-shared.sh"
"$BLE_VM_TOOLS/build-image.sh"
PAYLOAD=$(mktemp -d /var/tmp/trackme-capture.XXXXXX)
trap 'rm -rf "$PAYLOAD"' EXIT
cp "$ROOT/hardware/ble-vm/capture/run.sh" "$PAYLOAD/run.sh"
if ! "$BLE_VM_TOOLS/run-in-vm.sh" "$PAYLOAD"; then
	echo "capture-btmon.sh: the capture run failed (VM log: ${BLE_VM_LOG:-/var/tmp/ble-vm/last-run.log})" >&2
	exit 1
fi
cp "$PAYLOAD/out/bluez-tools.btmon.txt" "$PAYLOAD/out/bluez-tools.btsnoop" "$ROOT/hardware/btmon/"
echo "capture-btmon.sh: wrote hardware/btmon/bluez-tools.btmon.txt and .btsnoop"
