# Sourced by the BLE VM scripts: finds ../shared/tools/ble-vm (the team's shared tools beside the
# repository, as CI has it). BLE_VM_TOOLS overrides; a git worktree under wt/ also looks two up.
if [ -z "${BLE_VM_TOOLS:-}" ]; then
	for d in "$ROOT/../shared/tools/ble-vm" "$ROOT/../../shared/tools/ble-vm"; do
		if [ -x "$d/run-in-vm.sh" ]; then BLE_VM_TOOLS=$(cd "$d" && pwd); break; fi
	done
fi
if [ -z "${BLE_VM_TOOLS:-}" ] || [ ! -x "$BLE_VM_TOOLS/run-in-vm.sh" ]; then
	echo "BLE VM: ../shared/tools/ble-vm not found beside $ROOT (set BLE_VM_TOOLS)" >&2
	exit 2
fi
export BLE_VM_TOOLS
