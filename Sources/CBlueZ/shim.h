// Data path, step 1 (heart rate): BlueZ's C declarations for BlueZHeartRate.

// BlueZ's userspace library (Debian libbluetooth-dev, GPL-2.0-or-later).
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>
