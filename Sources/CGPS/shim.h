// Data path, step 2 (position): libgps's C declarations for the shim.

// gpsd's client library (Debian libgps-dev, BSD-2-Clause), API 11 on bookworm.
#include <gps.h>
