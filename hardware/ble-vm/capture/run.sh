# Runs inside the BLE test VM (replaces the self test): a good run of BlueZ's own tools, recorded
# with btmon on the central (hci1), for the parser fixtures in Tests/BlueZHeartRateTests/Fixtures.
#   hcitool lescan      -> LE Advertising Reports of the peripheral (ADV_IND with 0x180D, SCAN_RSP)
#   btgatt-client -m 185 -> MTU exchange, service/characteristic/descriptor discovery, CCCD write,
#                          Heart Rate Measurement notifications from btgatt-server -r
# Writes /payload/out/bluez-tools.btsnoop and its btmon decode bluez-tools.btmon.txt.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
trap '' PIPE
OUT=/payload/out
mkdir -p $OUT
fail() { echo "capture: FAIL: $*"; exit 1; }

modprobe hci_vhci || fail "modprobe hci_vhci"
btvirt -L -l2 > /tmp/btvirt.log 2>&1 &
for i in $(seq 1 50); do [ -e /sys/class/bluetooth/hci1 ] && break; sleep 0.1; done
[ -e /sys/class/bluetooth/hci1 ] || fail "btvirt made no hci1"
for c in hci0 hci1; do
	btmgmt -i $c le on > /dev/null
	btmgmt -i $c power on > /dev/null
done
btmgmt -i hci0 connectable on > /dev/null
btmgmt -i hci0 add-adv -c -g -u 180d -d 0a09486561727452617465 1 > /dev/null || fail "add-adv"
ADDR0=$(hciconfig hci0 | sed -n 's/.*BD Address: \([0-9A-F:]*\).*/\1/p')

stdbuf -oL btmon -i 1 -w $OUT/bluez-tools.btsnoop > /dev/null 2>&1 &
BTMON=$!
sleep 0.5
timeout -s INT 2 hcitool -i hci1 lescan > $OUT/lescan.log 2>&1
grep -q "$ADDR0" $OUT/lescan.log || fail "lescan did not see $ADDR0"

( sleep 600 | stdbuf -oL btgatt-server -i hci0 -r > /tmp/server.log 2>&1 ) &
for i in $(seq 1 50); do grep -q 'Started listening' /tmp/server.log && break; sleep 0.1; done
mkfifo /tmp/client.in
timeout 40 stdbuf -oL btgatt-client -i hci1 -d "$ADDR0" -m 185 < /tmp/client.in > $OUT/btgatt-client.log 2>&1 &
CLIENT=$!
exec 3> /tmp/client.in
for i in $(seq 1 100); do grep -q 'GATT discovery procedures complete' $OUT/btgatt-client.log && break; sleep 0.1; done
HANDLE=$(grep -i 'charac.*uuid: 00002a37' $OUT/btgatt-client.log | sed -n 's/.*value: 0x\([0-9a-f]*\),.*/\1/p' | head -1)
[ -n "$HANDLE" ] || fail "no 0x2A37 characteristic discovered"
echo "register-notify 0x$HANDLE" >&3
sleep 4.5
echo "quit" >&3
exec 3>&-
wait $CLIENT
sleep 0.5
kill $BTMON
wait $BTMON 2>/dev/null
btmon -r $OUT/bluez-tools.btsnoop > $OUT/bluez-tools.btmon.txt 2>&1
n=$(grep -c 'Handle Value Notification' $OUT/bluez-tools.btmon.txt)
echo "capture: $n notifications"
[ "$n" -ge 3 ] || fail "fewer than 3 notifications recorded"
echo "capture: ok"
