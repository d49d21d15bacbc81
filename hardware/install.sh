#!/usr/bin/env bash
# Installs the TrackMe Edge agent on the device (Raspberry Pi OS / Debian, run as root):
# binary, systemd unit, configuration, the `trackme` user and its directories.
#
#   sudo hardware/install.sh --binary ./trackme-agent [--start]
#   hardware/install.sh --dry-run --binary ./trackme-agent      # print what it would do
#
# Idempotent: run it again to upgrade the binary and unit. It never overwrites an existing
# /etc/trackme/agent.yaml or device token.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
binary=""
prefix="/usr/local"
config_source="$here/trackme-agent.example.yaml"
unit_source="$here/trackme-agent.service"
dry_run=0
start=0

usage() {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    echo "Options: --binary PATH (required)  --prefix DIR (default /usr/local)  --config PATH"
    echo "         --dry-run  --start (enable and start the service)  --help"
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --config) config_source="${2:?--config needs a path}"; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        --start) start=1; shift ;;
        --help|-h) usage; exit 0 ;;
        *) echo "install.sh: unknown option $1" >&2; usage >&2; exit 64 ;;
    esac
done

if [[ -z "$binary" ]]; then
    echo "install.sh: --binary is required (build it with: swift build -c release --product trackme-agent --static-swift-stdlib)" >&2
    exit 64
fi
for f in "$binary" "$unit_source" "$config_source" "$here/README.md"; do
    [[ -f "$f" ]] || { echo "install.sh: $f does not exist" >&2; exit 66; }
done
if [[ $dry_run -eq 0 && $EUID -ne 0 ]]; then
    echo "install.sh: run as root (or with --dry-run)" >&2
    exit 77
fi

# Every change goes through `run`, so --dry-run prints exactly what a real run does.
run() {
    if [[ $dry_run -eq 1 ]]; then
        printf '+ %s\n' "$*"
    else
        "$@"
    fi
}

bin_path="$prefix/bin/trackme-agent"
unit_path="/etc/systemd/system/trackme-agent.service"

# 1. The service user: no login, no home; the group lets operators use `trackme-agent status`.
if ! getent passwd trackme >/dev/null; then
    run useradd --system --user-group --no-create-home --home-dir /var/lib/trackme --shell /usr/sbin/nologin \
        --comment "TrackMe Edge agent" trackme
fi

# 2. The binary. The unit grants CAP_NET_RAW/CAP_NET_ADMIN through AmbientCapabilities, so the
#    file itself carries no capabilities (no setcap) and only the service gets them.
run install -D -m 0755 -o root -g root "$binary" "$bin_path"

# 3. Directories: configuration readable by the agent only; store owned by it.
run install -d -m 0750 -o root -g trackme /etc/trackme
run install -d -m 0750 -o trackme -g trackme /var/lib/trackme
run install -d -m 0755 "$prefix/share/doc/trackme"
run install -m 0644 "$here/README.md" "$prefix/share/doc/trackme/README.md"

# 4. Configuration, never overwritten; the device token is provisioned separately.
if [[ -e /etc/trackme/agent.yaml ]]; then
    echo "install.sh: keeping existing /etc/trackme/agent.yaml"
else
    run install -m 0640 -o root -g trackme "$config_source" /etc/trackme/agent.yaml
    echo "install.sh: edit /etc/trackme/agent.yaml (person, server.url, server.device_id), then re-check it"
fi
if [[ ! -e /etc/trackme/device-token ]]; then
    echo "install.sh: put the device token in /etc/trackme/device-token (mode 0640, root:trackme)"
fi

# 5. The store key (hardware/STORE-KEY.md), made once per device and never overwritten: 32 random
#    bytes as hex, sealed by systemd-creds (TPM2 where there is one, else the host key) for the
#    unit's LoadCredentialEncrypted=. Without systemd-creds (systemd < 250): a root-only key file
#    and a drop-in that hands it over with LoadCredential= instead.
credential=/etc/credstore.encrypted/trackme-store-key
key_file=/etc/trackme-key/store.key
dropin=/etc/systemd/system/trackme-agent.service.d/store-key.conf
if [[ -e "$credential" ]]; then
    echo "install.sh: keeping the store key credential $credential"
elif [[ -e "$key_file" ]]; then
    echo "install.sh: keeping the store key file $key_file"
elif [[ $dry_run -eq 1 ]]; then
    printf '+ %s\n' "install -d -m 0700 /etc/credstore.encrypted" \
        "head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \\n' | systemd-creds encrypt --name=trackme-store-key - $credential"
elif command -v systemd-creds >/dev/null; then
    install -d -m 0700 /etc/credstore.encrypted
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \n' | systemd-creds encrypt --name=trackme-store-key - "$credential")
    chmod 0400 "$credential"
    echo "install.sh: made the store key credential $credential (systemd-creds; key id: trackme-agent status)"
else
    install -d -m 0700 /etc/trackme-key
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \n' > "$key_file")
    chmod 0400 "$key_file"
    install -d -m 0755 "$(dirname "$dropin")"
    printf '[Service]\nLoadCredentialEncrypted=\nLoadCredential=trackme-store-key:%s\n' "$key_file" > "$dropin"
    echo "install.sh: no systemd-creds: made the root-only key file $key_file and $dropin"
fi

# 6. The unit, with ExecStart pointing at the installed binary.
if [[ $dry_run -eq 1 ]]; then
    printf '+ install -m 0644 %s %s (ExecStart=%s)\n' "$unit_source" "$unit_path" "$bin_path"
else
    sed "s|^ExecStart=/usr/local/bin/trackme-agent|ExecStart=$bin_path|" "$unit_source" > "$unit_path.tmp"
    chmod 0644 "$unit_path.tmp"
    mv "$unit_path.tmp" "$unit_path"
fi
run systemctl daemon-reload

# 7. Check the configuration before anything starts.
if [[ -e /etc/trackme/agent.yaml || $dry_run -eq 1 ]]; then
    run "$bin_path" config check /etc/trackme/agent.yaml || {
        echo "install.sh: fix /etc/trackme/agent.yaml, then: systemctl enable --now trackme-agent" >&2
        exit 1
    }
fi

if [[ $start -eq 1 ]]; then
    run systemctl enable --now trackme-agent.service
    echo "install.sh: started; check with: trackme-agent status   and   journalctl -u trackme-agent -f"
else
    echo "install.sh: installed; start with: systemctl enable --now trackme-agent"
fi
