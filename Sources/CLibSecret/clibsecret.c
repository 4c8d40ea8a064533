// See CLibSecret.h.
#include "CLibSecret.h"

GQuark clibsecret_io_error_quark(void) { return G_IO_ERROR; }
GQuark clibsecret_dbus_error_quark(void) { return G_DBUS_ERROR; }
