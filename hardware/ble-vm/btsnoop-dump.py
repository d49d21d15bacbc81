#!/usr/bin/env python3
"""Prints the HCI events and ATT PDUs of a btmon btsnoop file (btmon -w) as hex, one per line.

    btsnoop-dump.py FILE.btsnoop            # every LE Advertising Report event and ATT PDU
    btsnoop-dump.py FILE.btsnoop --att 0x1b # only ATT PDUs with that opcode

Each line: "<record> <hciN> <rx|tx> <kind> <hex>". <record> is the record's position in the
file, 1-based (btmon's own "#N" counts per controller and direction). ATT PDUs are the payload
of L2CAP CID 0x0004 in single-fragment ACL packets (all of them at the MTUs used here). The
fixtures under Tests/BlueZHeartRateTests/Fixtures were cut from this output.
"""
import struct
import sys

MONITOR = 2001
EVENT_PKT, ACL_TX, ACL_RX = 3, 4, 5


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"btsnoop\0":
        sys.exit(f"{path}: not a btsnoop file")
    version, link = struct.unpack(">II", data[8:16])
    if link != MONITOR:
        sys.exit(f"{path}: datalink {link}, expected {MONITOR} (btmon -w)")
    off, n = 16, 0
    while off + 24 <= len(data):
        _orig, incl, flags, _drops, _ts = struct.unpack(">IIIIq", data[off:off + 24])
        off += 24
        n += 1
        yield n, flags >> 16, flags & 0xFFFF, data[off:off + incl]
        off += incl


def main():
    path = sys.argv[1]
    only = int(sys.argv[3], 0) if len(sys.argv) > 3 and sys.argv[2] == "--att" else None
    for n, index, opcode, pkt in records(path):
        if opcode == EVENT_PKT and only is None:
            # LE Meta (0x3e) with subevent LE Advertising Report (0x02)
            if len(pkt) >= 3 and pkt[0] == 0x3E and pkt[2] == 0x02:
                print(f"{n} hci{index} rx le-adv-report {pkt.hex()}")
        elif opcode in (ACL_TX, ACL_RX) and len(pkt) >= 8:
            handle_flags, dlen, l2len, cid = struct.unpack("<HHHH", pkt[:8])
            pb = (handle_flags >> 12) & 0x3
            if cid != 0x0004 or pb == 0x1 or l2len != dlen - 4:
                continue
            att = pkt[8:8 + l2len]
            if only is not None and att[0] != only:
                continue
            d = "tx" if opcode == ACL_TX else "rx"
            print(f"{n} hci{index} {d} att-0x{att[0]:02x} {att.hex()}")


if __name__ == "__main__":
    main()
